/**
 * The stored recordings (`comfyui-<version>/<scenario>.json`, test data, one directory per ComfyUI
 * version the real-ComfyUI suite runs): read for comparison, written when `WES_RECORD=1` runs
 * the real-ComfyUI suite.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import type { Recording } from "./Recorder.js"

/** The ComfyUI version the fake is (its recordings are the ones it must reproduce). */
export const FAKE_VERSION = "0.3.64"

const here = path.dirname(fileURLToPath(import.meta.url))
const dir = (version: string) => path.join(here, `comfyui-${version}`)

/** The versions recorded (a `comfyui-<version>` directory each), newest first. */
export const RECORDED_VERSIONS: ReadonlyArray<string> = fs.readdirSync(here)
  .flatMap((name) => /^comfyui-(\d+\.\d+\.\d+)$/.exec(name)?.[1] ?? [])
  .sort((a, b) => b.localeCompare(a, "en", { numeric: true }))

/** The scenarios recorded on `version`. */
export const recordedScenarios = (version: string): ReadonlyArray<string> =>
  fs.readdirSync(dir(version)).filter((f) => f.endsWith(".json")).map((f) => f.slice(0, -5))

export const readRecording = (version: string, scenario: string): Recording =>
  JSON.parse(fs.readFileSync(path.join(dir(version), `${scenario}.json`), "utf8")) as Recording

export const writeRecording = (version: string, recording: Recording): void => {
  fs.mkdirSync(dir(version), { recursive: true })
  fs.writeFileSync(path.join(dir(version), `${recording.scenario}.json`), `${JSON.stringify(recording, null, 2)}\n`)
}
