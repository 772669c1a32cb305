/**
 * The runner gateway, measured: prompts posted by result and the runner's ComfyUI version, and the
 * time to copy each output file. A decorator, so the dispatcher in core stays as it is. (Connected WebSockets are counted by the
 * driver that reads them: core's Track.ts.)
 */
import { dispatchAttempts, isBlobBytes, outputTransfer, parseVersion, RunnerGateway, type RunnerTarget } from "@wes/core"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"

/** The version as its numbers only (a runner's own text never becomes a label), or `unknown`. */
const versionLabel = (runner: RunnerTarget): string => {
  const version = runner.comfyui?.version
  return (version === null || version === undefined ? undefined : parseVersion(version)?.join(".")) ?? "unknown"
}

const attempt = (runner: RunnerTarget, result: string) =>
  Metric.update(Metric.withAttributes(dispatchAttempts, { result, comfyui_version: versionLabel(runner) }), 1)

export const meteredGateway: Layer.Layer<RunnerGateway, never, RunnerGateway> = Layer.effect(
  RunnerGateway,
  Effect.map(RunnerGateway, (inner) =>
    RunnerGateway.of({
      ...inner,
      submit: (runner, prompt) =>
        inner.submit(runner, prompt).pipe(Effect.onExit((exit) =>
          attempt(runner, Exit.match(exit, {
            onSuccess: () => "submitted",
            onFailure: (cause) =>
              Option.match(Cause.findErrorOption(cause), { onNone: () => "error", onSome: (e) => (e._tag === "PromptRejected" ? "rejected" : e._tag === "PromptWithheld" ? "withheld" : "error") })
          })))),
      download: (runner, file) =>
        Effect.flatMap(Clock.currentTimeMillis, (start) => {
          const transferred = Effect.flatMap(Clock.currentTimeMillis, (end) => Metric.update(outputTransfer, (end - start) / 1000))
          // A small file arrives read whole: its transfer is over when the download answers.
          return Effect.flatMap(inner.download(runner, file), (download) =>
            isBlobBytes(download.content)
              ? Effect.as(transferred, download)
              : Effect.succeed({ ...download, content: download.content.pipe(Stream.onEnd(transferred)) }))
        })
    }))
)
