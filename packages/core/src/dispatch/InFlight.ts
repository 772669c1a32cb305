/**
 * A driver's view of its runner's unfinished workflows, kept in memory so that following a
 * prompt never reads the store: filled by claims (what this driver submits) and by
 * reconciliation (what another instance left behind), emptied when a workflow ends. Each entry
 * has a phase, and a phase change is atomic, so a workflow is submitted once and finished once
 * however many paths notice it at the same time.
 */
import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import type { WorkflowHead } from "../workflows/Workflow.js"

/** Being submitted by this driver; on the runner (queued or running there); having its end recorded. */
export type Phase = "submitting" | "onRunner" | "finishing"

export interface Tracked {
  readonly workflow: WorkflowHead
  readonly phase: Phase
}

export interface InFlight {
  readonly get: (id: string) => Effect.Effect<Option.Option<Tracked>>
  readonly all: Effect.Effect<ReadonlyArray<Tracked>>
  readonly count: (phase: Phase) => Effect.Effect<number>
  /** Adds or replaces an entry. */
  readonly put: (tracked: Tracked) => Effect.Effect<void>
  /** Replaces the record of an entry, keeping its phase (nothing when absent). */
  readonly refresh: (workflow: WorkflowHead) => Effect.Effect<void>
  /** Moves an entry to `to` if its phase is one of `from`; true when it did. */
  readonly shift: (id: string, from: ReadonlyArray<Phase>, to: Phase) => Effect.Effect<boolean>
  readonly remove: (id: string) => Effect.Effect<void>
}

export const makeInFlight: Effect.Effect<InFlight> = Effect.map(
  Ref.make(HashMap.empty<string, Tracked>()),
  (ref): InFlight => ({
    get: (id) => Effect.map(Ref.get(ref), HashMap.get(id)),
    all: Effect.map(Ref.get(ref), (map) => Array.from(HashMap.values(map))),
    count: (phase) => Effect.map(Ref.get(ref), (map) => HashMap.reduce(map, 0, (n, t) => (t.phase === phase ? n + 1 : n))),
    put: (tracked) => Ref.update(ref, HashMap.set(tracked.workflow.id as string, tracked)),
    refresh: (workflow) =>
      Ref.update(ref, (map) => HashMap.modify(map, workflow.id, (t) => ({ workflow, phase: t.phase }))),
    shift: (id, from, to) =>
      Ref.modify(ref, (map) => {
        const current = HashMap.get(map, id)
        if (Option.isNone(current) || !from.includes(current.value.phase)) return [false, map]
        return [true, HashMap.set(map, id, { workflow: current.value.workflow, phase: to })]
      }),
    remove: (id) => Ref.update(ref, HashMap.remove(id))
  })
)
