/**
 * A driver's view of its runner's unfinished workflows, kept in memory so that following a
 * prompt never reads the store: filled by claims (what this driver submits) and by
 * reconciliation (what another instance left behind), emptied when a workflow ends. Each entry
 * has a phase, and a phase change is atomic, so a workflow is submitted once and finished once
 * however many paths notice it at the same time.
 *
 * A runner may start a prompt before the submission that posted it has recorded it (the
 * WebSocket beats the HTTP answer). Then the start is noted on the entry, the submission writes
 * `running` with its own write, and the WebSocket's side waits for `recorded` instead of racing it.
 */
import type * as DateTime from "effect/DateTime"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import type { WorkflowHead } from "../domain/Workflow.js"
import type { FrameNodes } from "./FrameOutputs.js"
import type { PostAnswer } from "./PostAnswer.js"
import type { PromptProgress } from "./Progress.js"
import type { SeenRun } from "./SeenRun.js"

/** Being submitted by this driver; on the runner (queued or running there); having its end recorded. */
export type Phase = "submitting" | "onRunner" | "finishing"

export interface Tracked {
  readonly workflow: WorkflowHead
  readonly phase: Phase
  /** When the runner said it started the prompt, if that came while it was being submitted. */
  readonly startedAt?: DateTime.Utc | undefined
  /** Completed when the submission of this entry has written what it will write. */
  readonly recorded?: Deferred.Deferred<void> | undefined
  /** Completed with the runner's answer to the submission's post, as soon as it is known (PostAnswer.ts). */
  readonly answered?: Deferred.Deferred<PostAnswer> | undefined
  /** The runner's WebSocket showed the prompt's end before the answer to its post: that end's path records it. */
  readonly endSeen?: boolean | undefined
  /** The ids of the nodes of its graph (for the overall progress), when known. */
  readonly nodes?: ReadonlyArray<string> | undefined
  /** The nodes of its graph whose image frames may be outputs (FrameOutputs.ts), when known. */
  readonly frames?: FrameNodes | undefined
  /** The overall progress of its run (Progress.ts), once it started. */
  readonly progress?: PromptProgress | undefined
  /** What the runner's WebSocket showed of its run (SeenRun.ts), since it started on the current connection. */
  readonly run?: SeenRun | undefined
}

/** What following the runner's events changes on an entry. */
export type Followed = Pick<Tracked, "progress" | "run">

export interface InFlight {
  readonly get: (id: string) => Effect.Effect<Option.Option<Tracked>>
  /** Every entry, by workflow id, as of now. */
  readonly snapshot: Effect.Effect<HashMap.HashMap<string, Tracked>>
  /** Sets the progress and run of the entries named (those still present), in one step. */
  readonly follow: (changes: ReadonlyMap<string, Followed>) => Effect.Effect<void>
  readonly all: Effect.Effect<ReadonlyArray<Tracked>>
  readonly count: (phase: Phase) => Effect.Effect<number>
  /** Prompts this driver keeps on the runner: being submitted or on it (what `concurrencyPerRunner` bounds). */
  readonly load: Effect.Effect<number>
  /** Adds or replaces an entry. */
  readonly put: (tracked: Tracked) => Effect.Effect<void>
  /**
   * Starts tracking a workflow this driver is about to submit (`nodes`: its graph's node ids;
   * `frames`: those whose image frames may be outputs).
   */
  readonly submitting: (workflow: WorkflowHead, nodes: ReadonlyArray<string>, frames?: FrameNodes) => Effect.Effect<Deferred.Deferred<void>>
  /** Replaces the record of an entry, keeping the rest (nothing when absent). */
  readonly refresh: (workflow: WorkflowHead) => Effect.Effect<void>
  /** Changes an entry (nothing when absent). */
  readonly update: (id: string, f: (tracked: Tracked) => Tracked) => Effect.Effect<void>
  /** Changes an entry and returns what `f` says of it, in one step (none when absent). */
  readonly modify: <A>(id: string, f: (tracked: Tracked) => readonly [A, Tracked]) => Effect.Effect<Option.Option<A>>
  /** Moves an entry to `to` if its phase is one of `from`; true when it did. */
  readonly shift: (id: string, from: ReadonlyArray<Phase>, to: Phase) => Effect.Effect<boolean>
  /**
   * Notes that the runner started the prompt at `at`. While the entry is being submitted, the
   * submission will write it: the answer is what to wait for before looking again.
   */
  readonly noteStart: (id: string, at: DateTime.Utc) => Effect.Effect<Option.Option<Deferred.Deferred<void>>>
  readonly remove: (id: string) => Effect.Effect<void>
}

const loadOf = (map: HashMap.HashMap<string, Tracked>) => HashMap.reduce(map, 0, (n, t) => (t.phase === "finishing" ? n : n + 1))

/**
 * An empty view; `removed` runs after every removal (a slot on the runner may be free), and
 * `loaded` after every change that may change the load, with the load after it (a gauge: called
 * synchronously, in the step that changed it).
 */
export const makeInFlight = (
  removed: Effect.Effect<void> = Effect.void,
  loaded: (load: number) => void = () => {}
): Effect.Effect<InFlight> => Effect.map(
  Ref.make(HashMap.empty<string, Tracked>()),
  (ref): InFlight => {
    /** Changes the map and reports the load after it, in one step. */
    const change = <A>(f: (map: HashMap.HashMap<string, Tracked>) => readonly [A, HashMap.HashMap<string, Tracked>]) =>
      Effect.flatMap(Ref.modify(ref, (map) => {
        const [a, next] = f(map)
        return [[a, next !== map ? loadOf(next) : undefined] as const, next]
      }), ([a, load]) => {
        if (load !== undefined) loaded(load)
        return Effect.succeed(a)
      })
    return {
      get: (id) => Effect.map(Ref.get(ref), HashMap.get(id)),
      snapshot: Ref.get(ref),
      follow: (changes) =>
        changes.size === 0 ? Effect.void : Ref.update(ref, (map) => {
          let next = map
          for (const [id, { progress, run }] of changes) next = HashMap.modify(next, id, (t) => ({ ...t, progress, run }))
          return next
        }),
      all: Effect.map(Ref.get(ref), (map) => Array.from(HashMap.values(map))),
      count: (phase) => Effect.map(Ref.get(ref), (map) => HashMap.reduce(map, 0, (n, t) => (t.phase === phase ? n + 1 : n))),
      load: Effect.map(Ref.get(ref), loadOf),
      put: (tracked) => change((map) => [undefined, HashMap.set(map, tracked.workflow.id as string, tracked)]),
      submitting: (workflow, nodes, frames) =>
        Effect.flatMap(Effect.zip(Deferred.make<void>(), Deferred.make<PostAnswer>()), ([recorded, answered]) =>
          change((map) => [recorded, HashMap.set<string, Tracked>(map, workflow.id, { workflow, phase: "submitting", recorded, answered, nodes, frames })])),
      refresh: (workflow) => Ref.update(ref, (map) => HashMap.modify(map, workflow.id, (t) => ({ ...t, workflow }))),
      update: (id, f) => Ref.update(ref, (map) => HashMap.modify(map, id, f)),
      modify: <A>(id: string, f: (tracked: Tracked) => readonly [A, Tracked]) =>
        change((map): readonly [Option.Option<A>, HashMap.HashMap<string, Tracked>] => {
          const current = HashMap.get(map, id)
          if (Option.isNone(current)) return [Option.none(), map]
          const [a, next] = f(current.value)
          return [Option.some(a), next === current.value ? map : HashMap.set(map, id, next)]
        }),
      shift: (id, from, to) =>
        change((map) => {
          const current = HashMap.get(map, id)
          if (Option.isNone(current) || !from.includes(current.value.phase)) return [false, map]
          return [true, HashMap.set(map, id, { ...current.value, phase: to })]
        }),
      noteStart: (id, at) =>
        Ref.modify(ref, (map) => {
          const current = HashMap.get(map, id)
          if (Option.isNone(current) || current.value.phase !== "submitting" || current.value.recorded === undefined) {
            return [Option.none(), map]
          }
          return [Option.some(current.value.recorded), HashMap.set(map, id, { ...current.value, startedAt: at })]
        }),
      remove: (id) => Effect.andThen(change((map) => [undefined, HashMap.remove(map, id)]), removed)
    }
  }
)
