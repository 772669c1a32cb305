/**
 * How often a file's provisioning says how far it got (issue 34, item 3): a `progress` line when
 * 250 ms or 1 % of the file passed since the last one, and always the final count, so a
 * multi-GB download sends a few hundred lines, not one per network chunk.
 */
import type { ModelFile } from "@wes/core"
import type { ProvisionLine } from "@wes/runner-client/agent-protocol"

export const PROGRESS_INTERVAL_MS = 250

/** A reporter of `bytes` of `total` (null: unknown) for `model`, emitting throttled lines through `onLine`. */
export const progressReporter = (model: Pick<ModelFile, "folder" | "filename">, onLine: (line: ProvisionLine) => void) => {
  let lastAt = Number.NEGATIVE_INFINITY
  let lastBytes = -1
  return (bytes: number, total: number | null): void => {
    const now = Date.now()
    const final = total !== null && bytes >= total
    const step = total !== null && total > 0 && bytes - lastBytes >= total / 100
    if (bytes === lastBytes || (!final && !step && now - lastAt < PROGRESS_INTERVAL_MS)) return
    lastAt = now
    lastBytes = bytes
    onLine({ type: "progress", folder: model.folder, filename: model.filename, bytes, total })
  }
}
