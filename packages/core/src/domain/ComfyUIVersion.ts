/**
 * What WES knows of a runner's ComfyUI (its `/system_stats` and whether it has the jobs API) and
 * which versions it supports. 0.3.45 is the first that keeps the `prompt_id` a client sends (before,
 * WES could not follow its prompts); before 0.3.57 `/interrupt` ignores the prompt id and stops
 * whatever runs, so a cancel that comes as its prompt ends may stop the next one
 * (docs/operating-runners.md, "ComfyUI versions").
 */
import * as Schema from "effect/Schema"
import { Int } from "./Json.js"

/** The oldest ComfyUI WES supports. */
export const MIN_COMFYUI_VERSION = "0.3.45"
/** From this version `/interrupt` stops only the prompt it names. */
export const EXACT_INTERRUPT_VERSION = "0.3.57"

/** A device `/system_stats` lists: what stays true between two reads (not its free memory). */
export const RunnerDevice = Schema.Struct({
  name: Schema.String,
  type: Schema.String,
  index: Schema.NullOr(Int),
  /** Bytes. */
  vram_total: Schema.Finite
}).annotate({ identifier: "RunnerDevice" })
export interface RunnerDevice extends Schema.Schema.Type<typeof RunnerDevice> {}

/** The runner's ComfyUI as WES last probed it. */
export const RunnerComfyUI = Schema.Struct({
  /** `system.comfyui_version` of `/system_stats`; null when the runner did not say. */
  version: Schema.NullOr(Schema.String),
  devices: Schema.Array(RunnerDevice),
  /** The runner answers `GET /api/jobs`: WES cancels and asks after prompts through it. */
  jobs_api: Schema.Boolean
}).annotate({
  identifier: "RunnerComfyUI",
  description: "The runner's ComfyUI as WES last probed it (GET /system_stats, at registration and at every " +
    "(re)connection); null until probed"
})
export interface RunnerComfyUI extends Schema.Schema.Type<typeof RunnerComfyUI> {}

type Version = readonly [number, number, number]

/** `0.3.45`, `v0.3.45`, `0.3.45-dev+abc`: the leading numbers; undefined when there are none. */
export const parseVersion = (text: string): Version | undefined => {
  const m = /^v?(\d{1,6})\.(\d{1,6})(?:\.(\d{1,6}))?/.exec(text.trim())
  return m === null ? undefined : [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)]
}

const below = (a: Version, b: Version): boolean => a[0] !== b[0] ? a[0] < b[0] : a[1] !== b[1] ? a[1] < b[1] : a[2] < b[2]
const MIN = parseVersion(MIN_COMFYUI_VERSION)!
const EXACT_INTERRUPT = parseVersion(EXACT_INTERRUPT_VERSION)!

/**
 * How WES takes a version: `unknown` (not reported, or not a version number: accepted, WES cannot
 * tell), `unsupported` (below the minimum), `cancel_race` (0.3.45-0.3.56), `supported`.
 */
export const versionSupport = (version: string | null): "unknown" | "unsupported" | "cancel_race" | "supported" => {
  const v = version === null ? undefined : parseVersion(version)
  if (v === undefined) return "unknown"
  return below(v, MIN) ? "unsupported" : below(v, EXACT_INTERRUPT) ? "cancel_race" : "supported"
}

/** The version as its numbers only (a runner's answer is never quoted whole). */
export const shownVersion = (version: string): string => parseVersion(version)?.join(".") ?? "unknown"

/** The probe's refusal of a runner below the minimum. */
export const unsupportedVersionMessage = (version: string): string =>
  `runner runs ComfyUI ${shownVersion(version)}; WES needs ComfyUI ${MIN_COMFYUI_VERSION} or later`

/** Whether the runner may take work: not known to run a ComfyUI below the minimum. */
export const supportedComfyUI = (comfyui: RunnerComfyUI | null | undefined): boolean =>
  comfyui === null || comfyui === undefined || versionSupport(comfyui.version) !== "unsupported"

/** What a runner's detail warns about its ComfyUI, or null. */
export const comfyUIWarning = (comfyui: RunnerComfyUI | null): string | null => {
  if (comfyui === null) return null
  switch (versionSupport(comfyui.version)) {
    case "unknown":
      return `The runner did not report a ComfyUI version WES can read; WES needs ComfyUI ${MIN_COMFYUI_VERSION} or later`
    case "unsupported":
      return `${unsupportedVersionMessage(comfyui.version!)}: it gets no work until it is upgraded`
    case "cancel_race":
      return `ComfyUI ${shownVersion(comfyui.version!)} stops whatever runs when asked to interrupt one prompt ` +
        `(before ${EXACT_INTERRUPT_VERSION}): a cancel that comes as its prompt ends may stop the next prompt on ` +
        `this runner. Upgrade to ${EXACT_INTERRUPT_VERSION} or later`
    case "supported":
      return null
  }
}
