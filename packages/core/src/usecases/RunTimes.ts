/**
 * Recent run times per runner, for queue estimates (issue 17): the driver records how long each
 * completed prompt ran; a workflow's detail estimates its start from the average. Kept in memory
 * by the instance that drives the runner (another instance answers without an estimate), bounded:
 * the last `PER_RUNNER` runs of at most `RUNNERS` runners (a runner beyond that is not recorded).
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"

export const PER_RUNNER = 20
export const RUNNERS = 10_000

export class RunTimes extends Context.Service<RunTimes, {
  readonly record: (runnerId: string, ms: number) => Effect.Effect<void>
  /** The average of the recent runs on the runner, in ms; none before the first. */
  readonly average: (runnerId: string) => Effect.Effect<Option.Option<number>>
}>()("@wes/core/RunTimes") {
  static layer: Layer.Layer<RunTimes> = Layer.effect(
    RunTimes,
    Effect.map(Ref.make(HashMap.empty<string, ReadonlyArray<number>>()), (ref) =>
      RunTimes.of({
        record: (runnerId, ms) =>
          Ref.update(ref, (map) => {
            const runs = HashMap.get(map, runnerId)
            if (Option.isNone(runs) && HashMap.size(map) >= RUNNERS) return map
            return HashMap.set(map, runnerId, [...Option.getOrElse(runs, () => []), Math.max(0, ms)].slice(-PER_RUNNER))
          }),
        average: (runnerId) =>
          Effect.map(Ref.get(ref), (map) =>
            Option.flatMap(HashMap.get(map, runnerId), (runs) =>
              runs.length === 0 ? Option.none() : Option.some(runs.reduce((a, b) => a + b, 0) / runs.length)))
      }))
  )
}
