/**
 * The runner's answer to a prompt's post, between the submission that posts it and the end of
 * the prompt seen on the runner's WebSocket. An idle ComfyUI starts a prompt as it answers the
 * post, so a short prompt's end may arrive before the answer; and the answer may reject the
 * prompt although the runner ran part of it (a 200 with `node_errors`: the client takes the
 * prompt back and reports it rejected). So an end seen while its prompt is being submitted is
 * recorded once the answer is known: not at all when the prompt was rejected (the submission
 * records it `invalid`), otherwise by the end's path alone, in one write with the steps the
 * submission would have written (the submission then writes nothing).
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Driving } from "./Driving.js"

/** What the runner answered the post: accepted, rejected, or nothing (the submission ended without posting). */
export type PostAnswer = "posted" | "rejected" | "none"

/**
 * The submission of `id` has the runner's `answer`: an end waiting for it goes on. True when the
 * prompt's end was seen before the answer (the end's path records it, and the submission must
 * not write).
 */
export const answer = (id: string, answer: PostAnswer) =>
  Effect.gen(function*() {
    const { inFlight } = yield* Driving
    const seen = yield* inFlight.modify(id, (t) => [{ endSeen: t.endSeen === true, answered: t.answered }, t] as const)
    if (Option.isNone(seen)) return false
    if (seen.value.answered !== undefined) yield* Deferred.succeed(seen.value.answered, answer)
    return seen.value.endSeen
  })

/**
 * Runs `record` (the end of prompt `id`, seen on the WebSocket) once the submission under way for
 * it, if any, has the runner's answer; not at all when the runner rejected the prompt.
 */
export const afterAnswer = <E, R>(id: string, record: Effect.Effect<void, E, R>) =>
  Effect.gen(function*() {
    const { inFlight } = yield* Driving
    const waiting = yield* inFlight.modify(id, (t) =>
      t.phase === "submitting" && t.answered !== undefined ? [t.answered, { ...t, endSeen: true }] as const : [undefined, t] as const)
    const answered = Option.getOrUndefined(waiting)
    if (answered !== undefined && (yield* Deferred.await(answered)) === "rejected") return
    yield* record
  })
