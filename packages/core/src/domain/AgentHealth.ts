/**
 * Whether an agent runner takes work, from the health its agent reports (issue 34, item 4), and
 * why not, in the sentence the runner's detail and the dashboard show ("Not taking work: 1.2 GB
 * free disk, below 5 GB"). A runner whose disk has less free space than `minFreeDiskBytes` stops
 * claiming (a run that fills the disk fails late, after its model downloads and its queue wait)
 * and resumes once its agent reports more; unknown disk space blocks nothing. Pure: the driver
 * (dispatch/Claim.ts, through `diskBlockedReason`) and the views call it with the latest status.
 */
import * as Context from "effect/Context"
import * as Option from "effect/Option"

/** What of an agent's reported status the checks read (`RunnerAgents.status`). */
export interface ReportedHealth {
  readonly disk: { readonly free_bytes: number; readonly total_bytes: number } | null
  readonly connected: boolean
}

export interface AgentHealthOptions {
  /** Free disk an agent runner needs to claim new work, in bytes (`WES_AGENT_MIN_FREE_DISK`). */
  readonly minFreeDiskBytes: number
}

/** The default `minFreeDiskBytes`: 5 GiB. */
export const DEFAULT_MIN_FREE_DISK_BYTES = 5 * 1024 ** 3

/**
 * The free disk below which agent runners take no work, for the views outside the dispatcher
 * (`wes serve` sets it with the dispatcher's `minFreeDiskBytes`, from `WES_AGENT_MIN_FREE_DISK`).
 */
export const AgentMinFreeDisk: Context.Reference<number> = Context.Reference<number>("@wes/core/AgentMinFreeDisk", {
  defaultValue: () => DEFAULT_MIN_FREE_DISK_BYTES
})

const MiB = 1024 ** 2
const GiB = 1024 ** 3

/** Bytes as a person reads them: `10 GB`, `1.3 GB`, `300 MB`, `512 bytes` (GB and MB of 2^30 and 2^20). */
export const diskText = (bytes: number): string => {
  const text = (n: number, unit: string) => `${Number.isInteger(n) ? n : n.toFixed(1)} ${unit}`
  if (bytes >= GiB) return text(Math.round((bytes / GiB) * 10) / 10, "GB")
  if (bytes >= MiB) return text(Math.round((bytes / MiB) * 10) / 10, "MB")
  return `${Math.max(0, Math.round(bytes))} bytes`
}

/** Why the disk its agent reports keeps a runner from claiming work, or null (enough, or not reported). */
export const diskBlockedReason = (status: Pick<ReportedHealth, "disk"> | null | undefined, options: AgentHealthOptions): string | null => {
  const disk = status?.disk
  if (disk === null || disk === undefined || disk.free_bytes >= options.minFreeDiskBytes) return null
  return `Not taking work: ${diskText(disk.free_bytes)} free disk, below ${diskText(options.minFreeDiskBytes)}`
}

/**
 * Why an agent runner takes no work now (its agent never connected, is not connected, or reports
 * too little free disk), or null when it takes work.
 */
export const claimBlockedReason = (status: Option.Option<ReportedHealth>, options: AgentHealthOptions): string | null => {
  if (Option.isNone(status)) return "Not taking work: its agent has never connected"
  if (!status.value.connected) return "Not taking work: its agent is not connected"
  return diskBlockedReason(status.value, options)
}
