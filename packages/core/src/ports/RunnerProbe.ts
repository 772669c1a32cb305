/**
 * The check of a runner endpoint on create and update (design.md section 5): it answers as
 * ComfyUI, in a version WES supports (0.3.45 or later). What it answered is stored with the runner.
 */
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { RunnerProbeFailed } from "../domain/Errors.js"
import { type RunnerComfyUI, unsupportedVersionMessage, versionSupport } from "../domain/ComfyUIVersion.js"
import type { RunnerTarget } from "../domain/Runner.js"
import { RunnerGateway, type RunnerRequestFailed, type RunnerUnreachable } from "./RunnerGateway.js"

/**
 * The probe's answers: one fixed message per category, never the upstream's text or body (which
 * would make the probe an oracle for what listens on internal ports). The reason itself is
 * logged for the operator.
 */
export const PROBE_MESSAGES = {
  unreachable: "runner endpoint is not reachable: the connection failed",
  timeout: "runner endpoint is not reachable: no answer in time",
  notComfyUI: "runner endpoint answered, but not as ComfyUI (GET /system_stats)"
} as const

const categoryOf = (e: RunnerUnreachable | RunnerRequestFailed): keyof typeof PROBE_MESSAGES =>
  e._tag === "RunnerRequestFailed" || e.message.includes("runner answered HTTP")
    ? "notComfyUI"
    : e.message.includes("no answer within")
    ? "timeout"
    : "unreachable"

const failed = (category: keyof typeof PROBE_MESSAGES, reason: string) =>
  Effect.andThen(
    Effect.logInfo("runner probe failed", { category, reason }),
    Effect.fail(new RunnerProbeFailed({ message: PROBE_MESSAGES[category] }))
  )

export class RunnerProbe extends Context.Service<RunnerProbe, {
  /**
   * What the runner's ComfyUI answered when `GET {endpoint}/system_stats` answers in a supported
   * version; else a 400 naming the category, or the minimum version. Null when not probed (`Off`).
   */
  readonly check: (runner: RunnerTarget) => Effect.Effect<RunnerComfyUI | null, RunnerProbeFailed>
}>()("@wes/core/RunnerProbe") {
  /** Probes through the gateway with a timeout. */
  static layer = (timeout: Duration.Input = Duration.seconds(5)): Layer.Layer<RunnerProbe, never, RunnerGateway> =>
    Layer.effect(RunnerProbe, Effect.map(RunnerGateway, (gateway) => RunnerProbe.of({
      check: (runner) =>
        gateway.probe(runner).pipe(
          Effect.timeoutOrElse({
            duration: timeout,
            orElse: () => Effect.fail(new RunnerProbeFailed({ message: PROBE_MESSAGES.timeout }))
          }),
          Effect.catchTags({
            RunnerUnreachable: (e) => failed(categoryOf(e), e.message),
            RunnerRequestFailed: (e) => failed(categoryOf(e), e.message)
          }),
          Effect.filterOrFail(
            (info) => versionSupport(info.version) !== "unsupported",
            (info) => new RunnerProbeFailed({ message: unsupportedVersionMessage(info.version!) })
          )
        )
    })))

  /** Accepts every endpoint (`WES_RUNNER_PROBE=off`). */
  static Off: Layer.Layer<RunnerProbe> = Layer.succeed(RunnerProbe, RunnerProbe.of({ check: () => Effect.succeed(null) }))

  /** `WES_RUNNER_PROBE`: `off` disables the probe; anything else (default) enables it. */
  static fromConfig: Layer.Layer<RunnerProbe, never, RunnerGateway> = Layer.unwrap(
    Config.String("WES_RUNNER_PROBE").pipe(
      Config.withDefault("on"),
      Effect.orElseSucceed(() => "on"),
      Effect.map((v) => v.trim().toLowerCase() === "off" ? RunnerProbe.Off : RunnerProbe.layer())
    )
  )
}
