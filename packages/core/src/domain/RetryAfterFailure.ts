/**
 * `Effect.retry` whose machinery (the schedule's driver, its iteration metadata in the fiber's
 * context, about 60 runtime steps) is built only once `self` has failed: most runs succeed at
 * once. The first failure is replayed to the schedule, so the schedule sees every failure and
 * waits as a retry of the whole would.
 */
import * as Effect from "effect/Effect"
import type * as Schedule from "effect/Schedule"

export const retryAfterFailure = <A, E, R, Out, R2>(
  self: Effect.Effect<A, E, R>,
  schedule: Schedule.Schedule<Out, E, never, R2>,
  retryable: (e: E) => boolean = () => true
): Effect.Effect<A, E, R | R2> =>
  Effect.catchIf(self, retryable, (first) => {
    let replayed = false
    const again = Effect.suspend(() => replayed ? self : ((replayed = true), Effect.fail(first)))
    return Effect.retry(again, { schedule, while: retryable })
  })
