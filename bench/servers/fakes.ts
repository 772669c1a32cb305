/**
 * Fake ComfyUI runners for benchmarks, in their own process. Env: FAKES (count), FAKES_CACHE
 * (on|off). Records when each prompt arrived and when each progress message was sent, on the
 * wall clock with sub-millisecond precision, so other processes can compare.
 * IPC: submissions (count and unique), arrivals (prompt id -> time), progressSent (key -> time),
 * hold / release (every fake's nodes wait before running until released, one by one over
 * `spreadMs`: prompts are taken and started, nothing runs).
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { FakeComfyUI } from "@wes/runner-client/testing"
import { serve } from "../lib/child.js"

/**
 * The fakes' input/output directories, in memory (`/dev/shm`) where there is one: they stand in
 * for remote machines, whose file writes would not load this one. On this machine's disk a new
 * file costs about 1 ms of kernel CPU (BENCHMARKS.md, "How each is measured"), which the fakes
 * spent per output, on the cores WES was measured on.
 */
const shm = "/dev/shm"
const root = fs.mkdtempSync(path.join(fs.existsSync(shm) ? shm : os.tmpdir(), "wes-bench-fakes-"))

const now = () => performance.timeOrigin + performance.now()
const count = Number(process.env["FAKES"] ?? "1")
const arrivals = new Map<string, number>()
const progressSent = new Map<string, number>()
let submitted = 0
const fakes: Array<FakeComfyUI> = []
for (let i = 0; i < count; i++) {
  fakes.push(await FakeComfyUI.start({
    rootDir: path.join(root, String(i)),
    cache: process.env["FAKES_CACHE"] === "on",
    // FAKES_COUNT=on: every request is kept, for `requestCounts`.
    logLimit: process.env["FAKES_COUNT"] === "on" ? 10_000_000 : 10,
    onSubmission: (s) => {
      submitted++
      if (s.prompt_id !== null && s.status === 200) {
        const at = now()
        arrivals.set(s.prompt_id, at)
        if (process.env["FAKES_PUSH"] === "on") process.send!({ type: "arrival", id: s.prompt_id, at })
      }
    },
    onMessage: (type, data) => {
      if (type !== "progress") return
      const d = data as { prompt_id?: string; value?: number }
      if (d.prompt_id !== undefined) progressSent.set(`${d.prompt_id}:${d.value}`, now())
    }
  }))
}
serve({
  submissions: () => ({ total: submitted, unique: arrivals.size }),
  arrivals: () => Object.fromEntries(arrivals),
  progressSent: () => Object.fromEntries(progressSent),
  /** Requests by method and path (without ids), when FAKES_COUNT=on. */
  requestCounts: () => {
    const counts: Record<string, number> = {}
    for (const f of fakes) {
      for (const r of f.requests) {
        const key = `${r.method} ${r.path.split("?")[0]!.replace(/[0-9a-f-]{36}/g, ":id")}`
        counts[key] = (counts[key] ?? 0) + 1
      }
    }
    return counts
  },
  hold: () => {
    for (const f of fakes) f.hold()
    return true
  },
  /** Releases the fakes one by one over `spreadMs` (evenly), so their prompts do not run in step. */
  release: (args) => {
    const { spreadMs = 0 } = (args ?? {}) as { readonly spreadMs?: number }
    fakes.forEach((f, i) => (spreadMs > 0 && i > 0 ? setTimeout(() => f.release(), (i * spreadMs) / fakes.length) : f.release()))
    return true
  },
  reset: () => {
    arrivals.clear()
    progressSent.clear()
    submitted = 0
    return true
  }
}, { urls: fakes.map((f) => f.url) })
process.on("SIGTERM", () =>
  void Promise.all(fakes.map((f) => f.close())).then(() => {
    fs.rmSync(root, { recursive: true, force: true })
    process.exit(0)
  }))
