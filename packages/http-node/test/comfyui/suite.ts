/**
 * Shared pieces of the real-ComfyUI suites (`pnpm test:comfyui`): WES runs as `wes serve` child
 * processes (instances.ts) and is driven over its HTTP API only; ComfyUI is an unmodified
 * one on the CPU (RealComfyUI), 0.3.64 or 0.3.45 by the vitest project (`setup.version`; each
 * suite's title names it), checked through its own HTTP API. Waits are generous: a
 * ComfyUI on two shared cores is slow under load, and every wait is for a condition.
 */
import { execFile } from "node:child_process"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import type { ComfyUISetup, RealComfyUI } from "@wes/runner-client/testing"
import { comfyUISetup, onComfyUI } from "../../../runner-client/test/comfyui/context.js"
import { readJson, type WorkflowDetailJson } from "../harness.js"
import { type Instance, TERMINAL, type TestUser } from "../instances.js"
import { poll } from "../polling.js"

/** The ComfyUI setup of this run; undefined when the machine has none (the suites skip). */
export const setup: ComfyUISetup | undefined = comfyUISetup()

/** A suite's title with the ComfyUI version it runs against: `<title> (ComfyUI 0.3.45)`. */
export { onComfyUI }

/** Bound of every wait on ComfyUI work (a CPU ComfyUI under load). */
export const SLOW = 120_000

type Graph = Record<string, { readonly class_type: string; readonly inputs: Record<string, unknown> }>

/** A token for file name prefixes and colours, so no two runs share ComfyUI's cache or output names. */
export const unique = () => {
  const token = crypto.randomUUID().slice(0, 8)
  return { token, color: Number.parseInt(token.slice(0, 6), 16) }
}

/** EmptyImage -> ImageInvert -> SaveImage. */
export const smoke = (color: number, prefix: string): Graph => ({
  "1": { class_type: "EmptyImage", inputs: { width: 64, height: 64, batch_size: 1, color } },
  "2": { class_type: "ImageInvert", inputs: { image: ["1", 0] } },
  "3": { class_type: "SaveImage", inputs: { images: ["2", 0], filename_prefix: prefix } }
})

/**
 * EmptyImage (768 x 768) -> `blurs` x ImageBlur (radius 31) -> SaveImage: a few seconds of CPU
 * work with a node boundary (where interrupts land) every ~0.5 s.
 */
export const blurChain = (color: number, prefix: string, blurs = 6): Graph => {
  const g: Graph = { "1": { class_type: "EmptyImage", inputs: { width: 768, height: 768, batch_size: 1, color } } }
  for (let i = 2; i <= blurs + 1; i++) g[String(i)] = { class_type: "ImageBlur", inputs: { image: [String(i - 1), 0], blur_radius: 31, sigma: 5 } }
  g[String(blurs + 2)] = { class_type: "SaveImage", inputs: { images: [String(blurs + 1), 0], filename_prefix: prefix } }
  return g
}

export const detail = async (instance: Instance, user: TestUser, id: string): Promise<WorkflowDetailJson> =>
  readJson<WorkflowDetailJson>(await instance.fetch(`/v1/workflow/${id}`, { headers: user.auth }))

/** Waits until the workflow's status is one of `statuses` (default: any terminal one). */
export const waitStatus = (
  instance: Instance,
  user: TestUser,
  id: string,
  statuses: ReadonlyArray<string> = TERMINAL,
  timeoutMs = SLOW
): Promise<WorkflowDetailJson> => {
  let last = "unknown"
  return poll(() => `workflow ${id} to be ${statuses.join("|")} (it is ${last})`, async () => {
    const w = await detail(instance, user, id)
    last = w.status
    return statuses.includes(w.status) ? w : undefined
  }, timeoutMs, 100)
}

/** ComfyUI's own `/history` entry of a prompt, or undefined when it has none. */
export const comfyHistory = async (comfy: RealComfyUI, promptId: string): Promise<Record<string, unknown> | undefined> => {
  const answer = await (await fetch(`${comfy.url}/history/${promptId}`)).json() as Record<string, Record<string, unknown>>
  return answer[promptId]
}

/** The message types of a prompt's history status (execution_start, ..., the terminal one). */
export const comfyMessages = (entry: Record<string, unknown> | undefined): Array<string> =>
  ((entry?.["status"] as { messages?: Array<[string, unknown]> } | undefined)?.messages ?? []).map(([type]) => type)

/** ComfyUI's `/queue`: running and pending prompt ids. */
export const comfyQueue = async (comfy: RealComfyUI): Promise<{ running: Array<string>; pending: Array<string> }> => {
  const q = await (await fetch(`${comfy.url}/queue`)).json() as { queue_running: Array<[number, string]>; queue_pending: Array<[number, string]> }
  return { running: q.queue_running.map((i) => i[1]), pending: q.queue_pending.map((i) => i[1]) }
}

export interface ImageColours {
  readonly format: string
  readonly width: number
  readonly height: number
  readonly frames: number
  /** Distinct RGB colours with their pixel counts (Pillow's `getcolors`) of the first frame. */
  readonly colours: ReadonlyArray<readonly [number, readonly [number, number, number]]>
}

/** Decodes an image with Pillow from the ComfyUI install (the suite's only image decoder). */
export const imageColours = async (comfy: ComfyUISetup, bytes: Uint8Array): Promise<ImageColours> => {
  const file = path.join(await fs.mkdtemp(path.join(os.tmpdir(), "wes-img-")), "image")
  await fs.writeFile(file, bytes)
  const script = [
    "import json, sys",
    "from PIL import Image",
    "im = Image.open(sys.argv[1])",
    "frames = getattr(im, 'n_frames', 1)",
    "rgb = im.convert('RGB')",
    "print(json.dumps({'format': im.format, 'width': im.width, 'height': im.height, 'frames': frames, 'colours': rgb.getcolors(1 << 20)}))"
  ].join("\n")
  try {
    const out = await new Promise<string>((resolve, reject) =>
      execFile(path.join(comfy.dir, "venv", "bin", "python"), ["-c", script, file], (e, stdout, stderr) =>
        e === null ? resolve(stdout) : reject(new Error(`${e.message}: ${stderr}`))))
    return JSON.parse(out) as ImageColours
  } finally {
    await fs.rm(path.dirname(file), { recursive: true, force: true })
  }
}
