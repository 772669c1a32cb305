import * as Schema from "effect/Schema"
import type { LimitName } from "./Tier.js"

/**
 * A store refused an insert because a count bound given with it was reached. Stores check the
 * bound and insert atomically, so concurrent requests cannot overshoot a tier limit; the use cases
 * turn this into the 403 `TierLimitExceeded`.
 */
export class LimitReached extends Schema.TaggedError<LimitReached>()("LimitReached", {
  limit: Schema.Literals(["active_workflows", "workflows_per_day", "templates", "runners", "workflow_params"])
}) {}

/** The tier limit a `LimitReached` is about. */
export const limitName = (e: LimitReached): LimitName => e.limit
