/**
 * Whether a driver's runner may claim new work now, by the health its agent reports (issue 34,
 * item 4): an agent runner whose agent reports less free disk than `minFreeDiskBytes` claims
 * nothing (what it has runs to its end) until the agent reports more (domain/AgentHealth.ts).
 * A direct runner, or a dispatcher without the agent service, is never held. The agent's status
 * is read at most once per `claimInterval`, so a busy runner's wake-ups cost no extra reads;
 * a change either way is logged once.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { diskBlockedReason } from "../domain/AgentHealth.js"
import { RunnerAgents } from "../ports/RunnerAgents.js"
import { Driving } from "./Driving.js"

/** The check of one driver: why it may not claim now, or null. */
export const makeClaimHold: Effect.Effect<Effect.Effect<string | null>, never, Driving> = Effect.gen(function*() {
  const driving = yield* Driving
  const agents = yield* Effect.serviceOption(RunnerAgents)
  if (Option.isNone(agents)) return Effect.succeed(null)
  const spacing = Duration.toMillis(driving.options.claimInterval)
  let checkedAt = -Infinity
  let reason: string | null = null
  const check = Effect.gen(function*() {
    const target = yield* driving.target.pipe(Effect.orElseSucceed(() => Option.none()))
    if (Option.isNone(target) || target.value.connection !== "agent") return null
    const status = yield* agents.value.status(driving.ref.id)
    return diskBlockedReason(Option.getOrUndefined(status), { minFreeDiskBytes: driving.options.minFreeDiskBytes })
  })
  return Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    if (now - checkedAt < spacing) return reason
    checkedAt = now
    const next = yield* check
    if (next !== reason) {
      yield* next === null
        ? Effect.logInfo("runner takes work again: its agent reports enough free disk", { runner_id: driving.ref.id })
        : Effect.logWarning("runner takes no new work", { runner_id: driving.ref.id, reason: next })
    }
    reason = next
    return reason
  })
})
