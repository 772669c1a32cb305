/**
 * The runner's GPU as the agent reports it (issue 34, item 5): name, VRAM total and free, from
 * `nvidia-smi` when it is installed (what the driver says, the same whatever ComfyUI holds), else
 * from ComfyUI's `GET /system_stats` first device (which on a machine without a GPU is the CPU,
 * reported as ComfyUI names it). Each source gets 5 s; null when neither answers.
 */
import { execFile } from "node:child_process"
import type { AgentStatus } from "@wes/core"
import * as Schema from "effect/Schema"

export type Gpu = NonNullable<AgentStatus["gpu"]>

const TIMEOUT_MS = 5_000
const MIB = 1024 * 1024

/** The first GPU `nvidia-smi` lists, or null when it is missing, fails or prints something else. */
export const nvidiaSmiGpu = (command: string): Promise<Gpu | null> =>
  new Promise((resolve) => {
    execFile(
      command,
      ["--query-gpu=name,memory.total,memory.free", "--format=csv,noheader,nounits"],
      { timeout: TIMEOUT_MS, maxBuffer: 64 * 1024 },
      (error, stdout) => {
        if (error !== null) return resolve(null)
        const fields = stdout.split("\n")[0]?.split(",").map((f) => f.trim()) ?? []
        const [name, total, free] = fields
        const mib = (v: string | undefined) => (v !== undefined && /^\d+(\.\d+)?$/.test(v) ? Math.round(Number(v) * MIB) : null)
        resolve(name === undefined || name === "" ? null : { name, vram_total_bytes: mib(total), vram_free_bytes: mib(free) })
      }
    )
  })

const Device = Schema.Struct({
  name: Schema.String,
  vram_total: Schema.optionalKey(Schema.NullOr(Schema.Finite)),
  vram_free: Schema.optionalKey(Schema.NullOr(Schema.Finite))
})
const SystemStats = Schema.Struct({ devices: Schema.Array(Schema.Unknown) })
const decodeStats = Schema.decodeUnknownOption(SystemStats)
const decodeDevice = Schema.decodeUnknownOption(Device)

/** ComfyUI's first device from `/system_stats`, or null. */
export const comfyuiGpu = async (comfyui: URL): Promise<Gpu | null> => {
  try {
    const res = await fetch(new URL("system_stats", comfyui.href.endsWith("/") ? comfyui : `${comfyui.href}/`), {
      signal: AbortSignal.timeout(TIMEOUT_MS)
    })
    if (!res.ok) {
      await res.body?.cancel()
      return null
    }
    const stats = decodeStats(await res.json())
    if (stats._tag === "None") return null
    const device = decodeDevice(stats.value.devices[0])
    if (device._tag === "None") return null
    const d = device.value
    return { name: d.name, vram_total_bytes: d.vram_total ?? null, vram_free_bytes: d.vram_free ?? null }
  } catch {
    return null
  }
}

export const readGpu = async (comfyui: URL, nvidiaSmi: string): Promise<Gpu | null> =>
  (await nvidiaSmiGpu(nvidiaSmi)) ?? (await comfyuiGpu(comfyui))
