/**
 * A several-MB input through WES to an unmodified ComfyUI: a 1536 x 1024 PNG of noise (4.5 MB,
 * incompressible) sent as a `$file` part, streamed by WES to the blob store and on to ComfyUI's
 * `/upload/image`, loaded by LoadImage and saved again by SaveImage; the output has the input's
 * pixels (each channel within 1: ComfyUI's float images truncate on the way back to 8 bits).
 */
import { RealComfyUI } from "@wes/runner-client/testing"
import { execFile } from "node:child_process"
import * as crypto from "node:crypto"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import * as zlib from "node:zlib"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { readJson } from "../harness.js"
import { addRunner, createUser, createWorkflow, DATABASE_URL, type Instance, killAll, startInstance, type TestUser } from "../instances.js"
import { onComfyUI, setup, unique, waitStatus } from "./suite.js"

const WIDTH = 1536
const HEIGHT = 1024

/** An RGB PNG of random pixels: every row unfiltered, deflated at the fastest level. */
const noisePng = (width: number, height: number): Buffer => {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, "latin1"), data])
    const framed = Buffer.alloc(body.length + 8)
    framed.writeUInt32BE(data.length, 0)
    body.copy(framed, 4)
    framed.writeUInt32BE(zlib.crc32(body), body.length + 4)
    return framed
  }
  const header = Buffer.alloc(13)
  header.writeUInt32BE(width, 0)
  header.writeUInt32BE(height, 4)
  header.set([8, 2, 0, 0, 0], 8)
  const rows = Buffer.alloc((width * 3 + 1) * height)
  for (let y = 0; y < height; y++) crypto.randomFillSync(rows, y * (width * 3 + 1) + 1, width * 3)
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", zlib.deflateSync(rows, { level: 1 })),
    chunk("IEND", Buffer.alloc(0))
  ])
}

/** Both images decoded by ComfyUI's own Python (PIL, numpy): their sizes and the largest channel difference. */
const compare = async (a: Uint8Array, b: Uint8Array): Promise<{ sizes: Array<[number, number]>; maxDiff: number }> => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "wes-large-upload-"))
  try {
    await fs.writeFile(path.join(dir, "a"), a)
    await fs.writeFile(path.join(dir, "b"), b)
    const script = [
      "import json, sys",
      "import numpy as np",
      "from PIL import Image",
      "a, b = (Image.open(f).convert('RGB') for f in sys.argv[1:3])",
      "diff = int(np.abs(np.asarray(a, dtype=np.int16) - np.asarray(b, dtype=np.int16)).max()) if a.size == b.size else -1",
      "print(json.dumps({'sizes': [list(a.size), list(b.size)], 'maxDiff': diff}))"
    ].join("\n")
    const out = await new Promise<string>((resolve, reject) =>
      execFile(path.join(setup!.dir, "venv", "bin", "python"), ["-c", script, path.join(dir, "a"), path.join(dir, "b")], (e, stdout, stderr) =>
        e === null ? resolve(stdout) : reject(new Error(`${e.message}: ${stderr}`))))
    return JSON.parse(out) as { sizes: Array<[number, number]>; maxDiff: number }
  } finally {
    await fs.rm(dir, { recursive: true, force: true })
  }
}

describe.skipIf(setup === undefined)(onComfyUI("a several-MB upload through WES to a real ComfyUI"), () => {
  let comfy: RealComfyUI
  let wes: Instance
  let user: TestUser

  beforeAll(async () => {
    ;[comfy, wes] = await Promise.all([RealComfyUI.start(setup!), startInstance("wes", DATABASE_URL, { WES_STORAGE: "memory" })])
    user = await createUser(wes)
    await addRunner(wes, user, "comfyui", comfy.url)
  })
  afterAll(async () => {
    await killAll()
    await comfy?.close()
  })

  it("streams a 4.5 MB PNG to ComfyUI's LoadImage; SaveImage gives back its pixels", async () => {
    const { token } = unique()
    const input = noisePng(WIDTH, HEIGHT)
    expect(input.length).toBeGreaterThan(4 * 1024 * 1024)
    const w = await createWorkflow(wes, user, {
      "1": { class_type: "LoadImage", inputs: { image: "$file(photo)" } },
      "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: `${token}/large` } }
    }, { $photo: [new Uint8Array(input), `${token}.png`] as const })
    expect((await waitStatus(wes, user, w.id)).status).toBe("completed")
    const { outputs } = await readJson<{ outputs: Array<{ id: string; content_type: string }> }>(
      await wes.fetch(`/v1/workflow/${w.id}/outputs`, { headers: user.auth })
    )
    expect(outputs.map((o) => o.content_type)).toEqual(["image/png"])
    const output = new Uint8Array(await (await wes.fetch(`/v1/workflow/${w.id}/outputs/${outputs[0]!.id}`, { headers: user.auth })).arrayBuffer())
    const compared = await compare(input, output)
    expect(compared.sizes).toEqual([[WIDTH, HEIGHT], [WIDTH, HEIGHT]])
    expect(compared.maxDiff).toBeGreaterThanOrEqual(0)
    expect(compared.maxDiff).toBeLessThanOrEqual(1)
  }, 180_000)
})
