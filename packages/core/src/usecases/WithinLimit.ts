/** Creating what a tier limit counts (templates, runners) without overshooting the limit. */
import * as Effect from "effect/Effect"
import type { StorageError, TierLimitExceeded } from "../domain/Errors.js"
import type { LimitReached } from "../domain/LimitReached.js"
import { limitExceeded, type Tier, type TierPolicy } from "../domain/Tier.js"

/**
 * Creates one more of what `limit` counts for a user of `tier` who has `count` of them: refused
 * up front when the tier's limit is reached (before `create`'s work, e.g. a probe), then
 * `create`d with the limit as the bound its store insert checks atomically, so concurrent
 * creates cannot overshoot; the store's `LimitReached` is the 403 `TierLimitExceeded`.
 */
export const createWithinLimit = <A, E, R>(
  policy: TierPolicy["Service"],
  tier: Tier,
  limit: "templates" | "runners",
  count: Effect.Effect<number, StorageError>,
  create: (bound: number) => Effect.Effect<A, E | LimitReached, R>
): Effect.Effect<A, E | TierLimitExceeded | StorageError, R> =>
  Effect.gen(function*() {
    const bound = policy.limitsFor(tier)[limit]
    yield* Effect.fromResult(policy.check(tier, limit, yield* count))
    return yield* create(bound).pipe(Effect.catchTag("LimitReached", () => Effect.fail(limitExceeded(limit, tier, bound))))
  })
