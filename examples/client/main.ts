/**
 * The typed client against a running WES server:
 *
 *   WES_TOKEN=wes_... pnpm --filter @wes/example-client start [input.png]
 *
 * WES_URL (default http://127.0.0.1:8080), WES_TOKEN (required: `WES_DEV=1 pnpm start` prints a
 * demo token), COMFYUI_URL (the ComfyUI to register as a runner; without it a simulated ComfyUI
 * starts in this process, reachable by a server on this machine), WORKFLOW (a workflow file taking
 * `$file(image)`), OUT (default output.png).
 */
import { FakeComfyUI, solidPng } from "@wes/runner-client/testing"
import { readFile, writeFile } from "node:fs/promises"
import * as path from "node:path"
import { runClientPromise } from "./client.js"

const workflowFile = (name: string) => readFile(new URL(`./workflows/${name}`, import.meta.url), "utf8")

const main = async () => {
  const token = process.env["WES_TOKEN"]
  if (token === undefined || token === "") {
    console.error("Set WES_TOKEN to a user's API token. `WES_DEV=1 pnpm start` prints a demo token (\"Demo token: wes_...\").")
    process.exitCode = 2
    return
  }
  const configured = process.env["COMFYUI_URL"]
  const simulated = configured === undefined || configured === "" ? await FakeComfyUI.start() : undefined
  if (simulated !== undefined) console.log(`COMFYUI_URL is not set: a simulated ComfyUI runs in this process at ${simulated.url}`)
  try {
    const input = process.argv[2]
    const workflowJson = process.env["WORKFLOW"] !== undefined
      ? await readFile(process.env["WORKFLOW"], "utf8")
      // FakeSleep (in the simulated ComfyUI only) reports steps, so the bar has something to show.
      : await workflowFile(simulated === undefined ? "invert.json" : "invert-slow.json")
    const result = await runClientPromise({
      baseUrl: process.env["WES_URL"] ?? "http://127.0.0.1:8080",
      token,
      comfyuiUrl: configured ?? simulated!.url,
      workflowJson,
      image: input === undefined
        ? { filename: "input.png", bytes: solidPng(256, 256, 0x3366cc) }
        : { filename: path.basename(input), bytes: await readFile(input) },
      terminal: process.stdout
    })
    const out = process.env["OUT"] ?? "output.png"
    await writeFile(out, result.output.bytes)
    console.log(`workflow ${result.workflowId} ${result.status}: ${result.output.filename} -> ${out}`)
  } finally {
    await simulated?.close()
  }
}

main().catch((e: unknown) => {
  console.error(e)
  process.exitCode = 1
})
