/**
 * One agent's connection, from the upgrade to its close (issue 34). Over the WebSocket's byte
 * stream WES is the HTTP/2 client (AgentProtocol.ts). On connect this instance takes the runner's
 * presence and its lease (AgentPresence), becomes the runner's connection in the hub (replacing
 * an older one), wakes the dispatcher for the runner's work and reads its capabilities through
 * the agent. While connected, AgentUpkeep.ts reads `/status` and checks ping, token and presence.
 * On close everything goes: the session, the hub's entry, the gauges, the presence (if still ours).
 */
import {
  AgentPresence,
  type AgentIdentity,
  AgentTokens,
  DispatchQueue,
  RunnerCapabilities,
  RunnerOwnership,
  RunnerRepository,
  type StorageError,
  userRunnerTarget
} from "@wes/core"
import { CLOSE_SHUTDOWN } from "@wes/runner-client/agent-protocol"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type { WebSocket } from "ws"
import { forgetAgent, observeAgentConnected } from "./AgentMetrics.js"
import { AgentHub, type AgentLink } from "./AgentHub.js"
import { keepLoop, sessionOver, statusLoop, type Upkeep } from "./AgentUpkeep.js"

/** What a connection needs. */
export type AgentConnectionDeps =
  | AgentHub
  | AgentPresence
  | AgentTokens
  | RunnerOwnership
  | DispatchQueue
  | RunnerRepository
  | RunnerCapabilities

/** Serves `ws` (an authenticated agent of `identity.runner_id`) until it closes; interrupting it closes it with 1001. */
export const serveAgent = (ws: WebSocket, identity: AgentIdentity): Effect.Effect<void, never, AgentConnectionDeps> =>
  Effect.scoped(Effect.gen(function*() {
    const hub = yield* AgentHub
    const presence = yield* AgentPresence
    const tokens = yield* AgentTokens
    const queue = yield* DispatchQueue
    const { instanceId } = yield* RunnerOwnership
    const { leaseMs } = hub.settings
    const runnerId = identity.runner_id
    const log = { runner_id: runnerId, token_id: identity.token_id }

    const closed = yield* Deferred.make<string>()
    ws.on("close", (code, reason) => Deferred.doneUnsafe(closed, Exit.succeed(`code ${code}${reason.length > 0 ? `: ${reason.toString()}` : ""}`)))
    // An error ends the socket; its close (with the reason logged below) follows.
    ws.on("error", () => ws.terminate())
    let closing = false
    const link: AgentLink = {
      runnerId,
      tokenId: identity.token_id,
      session: sessionOver(ws),
      close: (code, reason) => {
        if (closing) return
        closing = true
        ws.close(code, reason)
        // A peer that does not finish the close handshake is cut off.
        setTimeout(() => ws.terminate(), 5_000).unref()
      }
    }
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        // Interrupted (shutdown): the agent is told to come back later.
        link.close(CLOSE_SHUTDOWN, "WES is shutting down")
        link.session.destroy()
        if (hub.unregister(link)) {
          yield* forgetAgent(runnerId)
          yield* presence.release(runnerId, instanceId).pipe(
            Effect.catch((e) => Effect.logWarning("could not release an agent's presence; it expires on its own", { ...log, error: e.message }))
          )
        }
        yield* Effect.logInfo("agent disconnected", log)
      }))

    const taken = yield* Effect.exit(presence.take(runnerId, instanceId, leaseMs))
    if (Exit.isFailure(taken)) {
      yield* Effect.logWarning("agent refused: its presence could not be recorded", log)
      link.close(1011, "WES could not record the connection; try again")
      return
    }
    hub.register(link)
    yield* observeAgentConnected(runnerId)
    yield* Effect.logInfo("agent connected", log)
    yield* queue.notify(runnerId).pipe(Effect.catch((e) => Effect.logWarning("could not wake the dispatcher for an agent's runner", { ...log, error: e.message })))
    // Its ComfyUI is probed and its capabilities read now, through the agent (its endpoint never is).
    yield* Effect.forkScoped(Effect.gen(function*() {
      const runner = yield* (yield* RunnerRepository).findById(runnerId)
      if (Option.isSome(runner)) yield* (yield* RunnerCapabilities).read(userRunnerTarget(runner.value))
    }).pipe(Effect.catch((e: StorageError) => Effect.logWarning("could not read an agent runner's capabilities", { ...log, error: e.message }))))

    const upkeep: Upkeep = { ws, link, identity, instanceId, hub, presence, tokens, log }
    yield* Effect.forkScoped(statusLoop(upkeep))
    yield* Effect.forkScoped(keepLoop(upkeep))

    const why = yield* Deferred.await(closed)
    yield* Effect.logDebug("agent WebSocket closed", { ...log, reason: why })
  }))
