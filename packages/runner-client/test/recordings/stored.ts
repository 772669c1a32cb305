/**
 * The stored recordings (`comfyui-0.3.64/<scenario>.json`, test data): read for comparison,
 * written when `WES_RECORD=1` runs the real-ComfyUI suite.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import type { Recording } from "./Recorder.js"

/** The ComfyUI version the recordings were made with (`shared/comfyui`). */
export const RECORDED_VERSION = "0.3.64"

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), `comfyui-${RECORDED_VERSION}`)

export const readRecording = (scenario: string): Recording =>
  JSON.parse(fs.readFileSync(path.join(dir, `${scenario}.json`), "utf8")) as Recording

export const writeRecording = (recording: Recording): void => {
  fs.mkdirSync(dir, { recursive: true })
  fs.writeFileSync(path.join(dir, `${recording.scenario}.json`), `${JSON.stringify(recording, null, 2)}\n`)
}
