/**
 * The runner gateway, measured: prompts posted by result, the time to copy each output file, and
 * how many runner WebSockets are connected. A decorator, so the dispatcher in core stays as it is.
 */
import { dispatchAttempts, outputTransfer, RunnerGateway, runnersConnected } from "@wes/core"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as MetricLabel from "effect/MetricLabel"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"

const attempt = (result: string) => Metric.update(Metric.tagged(dispatchAttempts, "result", result), 1)

export const meteredGateway: Layer.Layer<RunnerGateway, never, RunnerGateway> = Layer.effect(
  RunnerGateway,
  Effect.map(RunnerGateway, (inner) =>
    RunnerGateway.of({
      ...inner,
      submit: (runner, prompt) =>
        inner.submit(runner, prompt).pipe(Effect.onExit((exit) =>
          attempt(Exit.match(exit, {
            onSuccess: () => "submitted",
            onFailure: (cause) =>
              Option.match(Cause.failureOption(cause), { onNone: () => "error", onSome: (e) => (e._tag === "PromptRejected" ? "rejected" : "error") })
          })))),
      download: (runner, file) =>
        Effect.flatMap(Clock.currentTimeMillis, (start) =>
          Effect.map(inner.download(runner, file), (download) => ({
            ...download,
            stream: download.stream.pipe(Stream.onDone(() =>
              Effect.flatMap(Clock.currentTimeMillis, (end) => Metric.update(outputTransfer, (end - start) / 1000))))
          }))),
      events: (runner, clientId) =>
        Stream.suspend(() => {
          const label = [MetricLabel.make("runner_kind", runner.kind)]
          let connected = false
          const set = (up: boolean) =>
            Effect.sync(() => {
              if (up === connected) return
              connected = up
              runnersConnected.unsafeModify(up ? 1 : -1, label)
            })
          return inner.events(runner, clientId).pipe(
            Stream.tap((e) => (e._tag === "Connected" ? set(true) : e._tag === "Disconnected" ? set(false) : Effect.void)),
            Stream.ensuring(set(false))
          )
        })
    }))
)
