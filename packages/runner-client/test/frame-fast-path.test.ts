/**
 * The fast path of the frame decoder (FrameFastPath.ts) against the schema it stands in for: on
 * every JSON frame recorded from ComfyUI 0.3.64 and on variations of each (every field of its
 * data, and of the objects in it, removed or replaced by a value of another type), `decodeFrame`
 * must give exactly what the schema alone gives.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { decodeFrame, decodeFrameBySchema } from "../src/RunnerMessages.js"

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), "recordings", "comfyui-0.3.64")
const recorded = fs.readdirSync(dir).filter((f) => f.endsWith(".json")).flatMap((f) =>
  (JSON.parse(fs.readFileSync(path.join(dir, f), "utf8")) as { ws: ReadonlyArray<unknown> }).ws)
  .filter((m): m is { type: string; data: Record<string, unknown> } => typeof m === "object" && m !== null && "type" in m)

/** The recordings' placeholders as values of the recorded types. */
const concrete = (u: unknown): unknown =>
  u === "<ms>" ? 1_700_000_000_000 : Array.isArray(u) ? u.map(concrete) :
  typeof u === "object" && u !== null ? Object.fromEntries(Object.entries(u).map(([k, v]) => [k, concrete(v)])) : u

const others: ReadonlyArray<unknown> = [null, 7, 2.5, "9", true, [], ["1", 2], {}, { x: 1 }]

/** `value` with each field (at any depth, arrays included) removed or replaced by another type. */
const variations = (value: unknown): Array<unknown> => {
  if (typeof value !== "object" || value === null) return []
  const out: Array<unknown> = []
  const entries = Object.entries(value)
  for (const [key, v] of entries) {
    const rest = Array.isArray(value) ? value.filter((_, i) => String(i) !== key) : Object.fromEntries(entries.filter(([k]) => k !== key))
    out.push(rest)
    for (const other of others) {
      if (JSON.stringify(other) !== JSON.stringify(v)) out.push(Array.isArray(value) ? value.map((x, i) => String(i) === key ? other : x) : { ...value, [key]: other })
    }
    for (const inner of variations(v)) out.push(Array.isArray(value) ? value.map((x, i) => String(i) === key ? inner : x) : { ...value, [key]: inner })
  }
  return out
}

describe("the frame decoder's fast path", () => {
  const known = new Set(["status", "execution_start", "execution_cached", "progress_state", "executing", "progress", "executed", "execution_success", "execution_error", "execution_interrupted"])
  const frames = (recorded.map(concrete) as Array<{ type: string; data: unknown }>).filter((f) => known.has(f.type))
  const types = new Set(frames.map((f) => f.type))

  it("reads every recorded frame exactly as the schema does", () => {
    expect(types).toContain("progress_state")
    for (const frame of frames) {
      const text = JSON.stringify(frame)
      expect(decodeFrame(text), text).toEqual(decodeFrameBySchema(text))
    }
  })

  it("reads every variation of them exactly as the schema does (fields missing or of other types, numeric node ids)", () => {
    let checked = 0
    const seen = new Set<string>()
    for (const frame of frames) {
      for (const data of [frame.data, ...variations(frame.data)]) {
        const text = JSON.stringify({ type: frame.type, data })
        if (seen.has(text)) continue
        seen.add(text)
        expect(decodeFrame(text), text).toEqual(decodeFrameBySchema(text))
        checked++
      }
      for (const other of others) {
        const text = JSON.stringify({ type: frame.type, data: other })
        expect(decodeFrame(text), text).toEqual(decodeFrameBySchema(text))
      }
    }
    expect(checked).toBeGreaterThan(1000)
  })
})
