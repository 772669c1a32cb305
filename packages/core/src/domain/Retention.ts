/**
 * Retention (issue 33): a finished workflow's files are kept for its owner's tier's
 * `retention_days` after it ended, then the sweeper deletes them; its output rows stay, marked
 * with the date their retention ended, and a download answers 410 naming it.
 */
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import { OutputExpired } from "./Errors.js"
import type { Tier, TierTable } from "./Tier.js"
import type { WorkflowHead, WorkflowOutput } from "./Workflow.js"

const DAY_MS = 86_400_000

/** Per tier, the latest end a finished workflow may have for its files to be due at `now`. */
export type RetentionCutoffs = { readonly [T in Tier]: DateTime.Utc }

/** The cutoffs of `table` at `now`: now minus each tier's `retention_days`. */
export const retentionCutoffs = (table: TierTable, now: DateTime.Utc): RetentionCutoffs => ({
  free: DateTime.subtractDuration(now, Duration.days(table.free.retention_days)),
  pro: DateTime.subtractDuration(now, Duration.days(table.pro.retention_days)),
  plus: DateTime.subtractDuration(now, Duration.days(table.plus.retention_days))
})

/** When the files of a workflow that ended at `end` expire under `days` of retention. */
export const expiryOf = (end: DateTime.Utc, days: number): DateTime.Utc => DateTime.addDuration(end, Duration.days(days))

/** The retention an expired output had: whole days from its workflow's end to its expiry. */
const retentionDays = (workflow: Pick<WorkflowHead, "completed_at">, expiredAt: DateTime.Utc): number =>
  workflow.completed_at === null
    ? 0
    : Math.round((DateTime.toEpochMillis(expiredAt) - DateTime.toEpochMillis(workflow.completed_at)) / DAY_MS)

/** The 410 of an expired output (undefined while it is kept). */
export const outputExpired = (
  workflow: Pick<WorkflowHead, "completed_at">,
  output: Pick<WorkflowOutput, "expired_at">
): OutputExpired | undefined => {
  if (output.expired_at === null) return undefined
  const at = DateTime.formatIso(output.expired_at)
  const days = retentionDays(workflow, output.expired_at)
  return new OutputExpired({
    message: `Output expired on ${at} (retention: ${days} day${days === 1 ? "" : "s"}); its file was deleted`,
    expired_at: at
  })
}
