/** The reachability check of a runner endpoint on create and update (design.md section 5). */
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { RunnerProbeFailed } from "../shared/Errors.js"
import type { RunnerTarget } from "./Runner.js"
import { RunnerGateway } from "./RunnerGateway.js"

export class RunnerProbe extends Context.Tag("@wes/core/RunnerProbe")<RunnerProbe, {
  /** Succeeds when `GET {endpoint}/system_stats` answers, else a 400 naming the reason. */
  readonly check: (runner: RunnerTarget) => Effect.Effect<void, RunnerProbeFailed>
}>() {
  /** Probes through the gateway with a timeout. */
  static layer = (timeout: Duration.DurationInput = Duration.seconds(5)): Layer.Layer<RunnerProbe, never, RunnerGateway> =>
    Layer.effect(RunnerProbe, Effect.map(RunnerGateway, (gateway) => RunnerProbe.of({
      check: (runner) =>
        gateway.probe(runner).pipe(
          Effect.timeoutFail({
            duration: timeout,
            onTimeout: () => new RunnerProbeFailed({ message: `runner endpoint is not reachable: no answer within ${Duration.format(timeout)}` })
          }),
          Effect.catchTags({
            RunnerUnreachable: (e) => Effect.fail(new RunnerProbeFailed({ message: `runner endpoint is not reachable: ${e.message}` })),
            RunnerRequestFailed: (e) => Effect.fail(new RunnerProbeFailed({ message: `runner endpoint is not reachable: ${e.message}` }))
          }),
          Effect.asVoid
        )
    })))

  /** Accepts every endpoint (`WES_RUNNER_PROBE=off`). */
  static Off: Layer.Layer<RunnerProbe> = Layer.succeed(RunnerProbe, RunnerProbe.of({ check: () => Effect.void }))

  /** `WES_RUNNER_PROBE`: `off` disables the probe; anything else (default) enables it. */
  static fromConfig: Layer.Layer<RunnerProbe, never, RunnerGateway> = Layer.unwrapEffect(
    Config.string("WES_RUNNER_PROBE").pipe(
      Config.withDefault("on"),
      Effect.orElseSucceed(() => "on"),
      Effect.map((v) => v.trim().toLowerCase() === "off" ? RunnerProbe.Off : RunnerProbe.layer())
    )
  )
}
