/**
 * The end of a prompt as the WebSocket showed it (core's SeenRun) against the history the real
 * ComfyUI wrote for it: for every prompt of every recorded scenario whose history was read, the
 * frames recorded from its `execution_start` to its `executing {node: null}` must give the same
 * outcome, outputs (in the same order), timestamps and error as `/history/{id}`. This is what lets
 * the driver skip the history read for a run it saw whole.
 */
import { type PromptHistory } from "@wes/core"
import { type SeenRun, seenHistory, seeRun, startRun } from "@wes/core/testing"
import * as Schema from "effect/Schema"
import { describe, expect, it } from "vitest"
import { HistoryEntry, toPromptHistory } from "../../src/ComfyResponses.js"
import { decodeFrame } from "../../src/RunnerMessages.js"
import { readRecording, RECORDED_VERSIONS, recordedScenarios } from "./stored.js"

/** The recordings' timestamp placeholders as numbers (the same on both sides). */
const numbered = (value: unknown): unknown =>
  value === "<ms>" ? 0 : Array.isArray(value) ? value.map(numbered) :
  typeof value === "object" && value !== null ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, numbered(v)])) : value

/** Each prompt's end as the frames showed it, by prompt id. */
const seenEnds = (frames: ReadonlyArray<unknown>): Map<string, PromptHistory | undefined> => {
  const runs = new Map<string, SeenRun>()
  const ends = new Map<string, PromptHistory | undefined>()
  for (const frame of frames) {
    const decoded = decodeFrame(JSON.stringify(numbered(frame)))
    if (decoded._tag !== "Event") continue
    const event = decoded.event
    if (event._tag === "ExecutionStart") runs.set(event.prompt_id, startRun(event.timestamp))
    else if (event._tag === "PromptDone") {
      // What the history lists too (frame images it never lists are compared with the frames themselves elsewhere).
      const seen = seenHistory(runs.get(event.prompt_id))
      ends.set(event.prompt_id, seen === undefined ? undefined : (({ frames: _, ...end }) => end)(seen))
    }
    else if ("prompt_id" in event && event.prompt_id !== null) {
      const run = runs.get(event.prompt_id)
      if (run !== undefined) runs.set(event.prompt_id, seeRun(run, event))
    }
  }
  return ends
}

for (const version of RECORDED_VERSIONS) {
  describe(`a run seen on the WebSocket against the history of ComfyUI ${version}`, () => {
    let compared = 0
    for (const name of recordedScenarios(version)) {
      const recording = readRecording(version, name)
      const histories = recording.http.flatMap((x) => {
        const id = /^GET \/history\/(<[^>]+>)$/.exec(x.request)?.[1]
        const entry = id === undefined ? undefined : (x.answer as Record<string, unknown> | null)?.[id]
        return id === undefined || entry === undefined ? [] : [[id, entry] as const]
      })
      if (histories.length === 0) continue
      it(`${name}: the same end as the history`, () => {
        const ends = seenEnds(recording.ws)
        for (const [id, entry] of histories) {
          // The prompt's classes are what the history adds (the driver noted them at the claim).
          const { classes: _, ...history } = toPromptHistory(Schema.decodeUnknownSync(HistoryEntry)(numbered(entry)))
          expect(ends.get(id), id).toEqual(history)
          compared++
        }
      })
    }
    it("compared the runs of several scenarios, successes, errors and an interruption among them", () => {
      expect(compared).toBeGreaterThanOrEqual(8)
    })
  })
}
