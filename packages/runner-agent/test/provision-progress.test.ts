/** Provisioning's progress lines: at most one per 250 ms or 1 % of the file, and always the final count. */
import type { ProvisionLine } from "@wes/runner-client/agent-protocol"
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest"
import { progressReporter } from "../src/ProvisionProgress.js"

beforeEach(() => {
  vi.useFakeTimers()
})
afterEach(() => {
  vi.useRealTimers()
})

describe("progressReporter", () => {
  it("reports a large download in about a hundred lines, ending with its final count", () => {
    const lines: Array<ProvisionLine> = []
    const report = progressReporter({ folder: "checkpoints", filename: "big.safetensors" }, (l) => lines.push(l))
    const total = 6_000_000_000
    const chunk = 65_536
    for (let at = 0; at < total; at += chunk) report(at, total)
    report(total, total)
    expect(lines.length).toBeGreaterThan(90)
    expect(lines.length).toBeLessThanOrEqual(102)
    expect(lines.at(-1)).toEqual({ type: "progress", folder: "checkpoints", filename: "big.safetensors", bytes: total, total })
  })

  it("reports a download of unknown size every 250 ms", () => {
    const lines: Array<ProvisionLine> = []
    const report = progressReporter({ folder: "loras", filename: "x.safetensors" }, (l) => lines.push(l))
    report(1, null)
    report(2, null)
    vi.advanceTimersByTime(249)
    report(3, null)
    vi.advanceTimersByTime(1)
    report(4, null)
    expect(lines.map((l) => (l.type === "progress" ? l.bytes : -1))).toEqual([1, 4])
  })
})
