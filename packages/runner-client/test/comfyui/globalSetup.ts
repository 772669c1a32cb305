/**
 * Global setup of each project of `pnpm test:comfyui` (vitest.comfyui.config.ts, one project per
 * ComfyUI version): finds the machine's ComfyUI setup script beside the clone
 * (`../shared/comfyui`), installs the project's ComfyUI version into its cache directory on first
 * use (1-4 min; later runs check it in seconds), and hands the setup to the test files. Without
 * the script the suites skip, and this says so loudly. Teardown kills any ComfyUI a test file
 * started and did not stop (a crashed worker), so no process outlives the run.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { installComfyUI, killRecorded, locateComfyUISetup } from "@wes/runner-client/testing"
import type { TestProject } from "vitest/node"
import type { ComfyUIContext } from "./context.js"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..")

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const version = project.getProvidedContext().comfyuiVersion
  const found = locateComfyUISetup(root, version)
  if (found === undefined) {
    const line = "!".repeat(100)
    console.warn(`\n${line}\n!! ${path.resolve(root, "../shared/comfyui")} is absent: the real-ComfyUI ${version} suites are SKIPPED.\n${line}\n`)
    project.provide("comfyui", null)
    return () => Promise.resolve()
  }
  const started = Date.now()
  await installComfyUI(found)
  console.log(`ComfyUI ${version} ready in ${found.dir} (${((Date.now() - started) / 1000).toFixed(1)} s)`)
  const pidDir = fs.mkdtempSync(path.join(os.tmpdir(), "wes-comfyui-pids-"))
  const context: ComfyUIContext = { script: found.script, version, dir: found.dir, pidDir }
  project.provide("comfyui", context)
  return async () => {
    const left = await killRecorded(pidDir)
    if (left > 0) console.warn(`killed ${left} ComfyUI ${version} process(es) a test file left running`)
    fs.rmSync(pidDir, { recursive: true, force: true })
  }
}
