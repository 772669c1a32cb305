/**
 * WES inside an application that is written with Effect 4 itself: WES's layers (wes.ts) are
 * composed with the host's own, so WES runs on the host's logger, tracer and scope.
 *
 * - Logger: the host's (`Logger.layer` below) gets every log line of WES, those of the dispatcher's
 *   background fibers included; `Logger.tracerLogger` also records each line as an event of the
 *   span it was written in.
 * - Tracer: the host's (`Tracer.Tracer`; an OTLP exporter in production, `OtlpTracer.layer` of
 *   `effect/observability`). `Layer.span("wes")` opens one span of it around WES's layers:
 *   everything WES starts (dispatcher, runner connections) runs under it, so WES's log lines carry
 *   its trace, and any span WES makes (the SQL statements of `@wes/storage-pg`) is its child. The
 *   host's own spans (`swatches.create`, ...) are the parents of what WES does for them.
 * - Scope: WES's fibers live in the scope the host builds its layers in. Closing it stops them:
 *   the dispatcher and its drivers, the runner connections; then the store closes.
 *
 * Run: `pnpm --filter @wes/example-embed-in-your-backend exec tsx --conditions=@wes/source host.ts`
 * (COMFYUI_URL, DATABASE_URL, OUT as in facade.ts).
 */
import { AccountService, RunnerService, WorkflowService } from "@wes/core"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import type * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as References from "effect/References"
import * as Stream from "effect/Stream"
import * as Tracer from "effect/Tracer"
import { writeFile } from "node:fs/promises"
import { pathToFileURL } from "node:url"
import { comfyuiFromEnv } from "./comfyui.js"
import { type WesSettings, wesLayer } from "./wes.js"
import { swatchWorkflow } from "./workflow.js"

/** One line of the host's log: what a JSON log line of the host carries. */
export interface HostLogLine {
  readonly level: LogLevel.LogLevel
  readonly message: string
  readonly annotations: Readonly<Record<string, unknown>>
  readonly fiber: number
  /** The span the line was written in (WES's lines too), when there is one. */
  readonly trace_id: string | undefined
  readonly span_id: string | undefined
}

const text = (message: unknown): string => {
  const parts = Array.isArray(message) ? message : [message]
  return parts.map((p) => (typeof p === "string" ? p : JSON.stringify(p))).join(" ")
}

/** The host's logger: structured lines with the current span's ids, into `write`. */
export const hostLogger = (write: (line: HostLogLine) => void) =>
  Logger.make(({ fiber, logLevel, message }) => {
    const span = Option.getOrUndefined(Context.getOption(fiber.context, Tracer.ParentSpan))
    write({
      level: logLevel,
      message: text(message),
      annotations: fiber.getRef(References.CurrentLogAnnotations),
      fiber: fiber.id,
      trace_id: span?.traceId,
      span_id: span?.spanId
    })
  })

/** The host's tracer: Effect's in-memory spans, each handed to `onSpan` when it starts (a stand-in for an exporter). */
export const hostTracer = (onSpan: (span: Tracer.NativeSpan) => void): Tracer.Tracer =>
  Tracer.make({
    span: (options) => {
      const span = new Tracer.NativeSpan(options)
      onSpan(span)
      return span
    }
  })

export interface HostTelemetry {
  readonly log: (line: HostLogLine) => void
  readonly onSpan?: (span: Tracer.NativeSpan) => void
  /** Default "Info"; "Debug" shows the dispatcher's lines ("driving runner", ...). */
  readonly minimumLogLevel?: LogLevel.LogLevel
}

/** The host's logger, tracer and log level, as one layer. */
export const hostTelemetry = (telemetry: HostTelemetry): Layer.Layer<never> =>
  Layer.mergeAll(
    Logger.layer([hostLogger(telemetry.log), Logger.tracerLogger]),
    Layer.succeed(Tracer.Tracer, hostTracer(telemetry.onSpan ?? (() => {}))),
    Layer.succeed(References.MinimumLogLevel, telemetry.minimumLogLevel ?? "Info")
  )

/** The host's own failure: no image (the workflow failed, or the file could not be written). */
export class SwatchFailed extends Data.TaggedError("SwatchFailed")<{ readonly message: string }> {}

const makeSwatches = (comfyuiUrl: string) =>
  Effect.gen(function*() {
    const accounts = yield* AccountService
    const runners = yield* RunnerService
    const workflows = yield* WorkflowService
    const user = yield* accounts.createUser({ tier: "pro" })
    yield* runners.create(user, { name: "comfyui", endpoint: comfyuiUrl })

    const create = (color: number, size: number) =>
      workflows.create(user, {
        name: `swatch #${color.toString(16).padStart(6, "0")}`,
        workflow_json: swatchWorkflow,
        params: [
          { field: "$color", value: { _tag: "Text", text: String(color) } },
          { field: "$size", value: { _tag: "Text", text: String(size) } }
        ]
      }).pipe(Effect.withSpan("swatches.create", { attributes: { color, size } }))

    const image = (id: string) =>
      Effect.gen(function*() {
        const events = yield* workflows.follow(user, id)
        yield* Stream.runForEach(events, (e) => Effect.logInfo(`swatch ${id}: ${e.type}`))
        const finished = yield* workflows.get(user, id)
        if (finished.status !== "completed") return yield* new SwatchFailed({ message: `workflow ${finished.status}: ${finished.exception_message ?? "no output"}` })
        const [first] = yield* workflows.outputs(user, id)
        if (first === undefined) return yield* new SwatchFailed({ message: "the workflow produced no file" })
        const { blob, output } = yield* workflows.openOutput(user, id, first.id)
        const chunks = yield* Stream.runCollect(blob.stream)
        return { filename: output.filename, bytes: Buffer.concat(chunks) }
      }).pipe(Effect.withSpan("swatches.image", { attributes: { workflow_id: id } }))

    return { user, create, image }
  })

/** The host's own service, written on WES's use cases: swatches for one WES user with one runner. */
export class Swatches extends Context.Service<Swatches, Effect.Success<ReturnType<typeof makeSwatches>>>()("example/Swatches") {}

export interface HostOptions {
  readonly comfyuiUrl: string
  readonly wes?: WesSettings
  readonly telemetry: HostTelemetry
}

/**
 * The host's layers: its service over WES's (in one span of the host's tracer), all on the host's
 * logger and tracer. WES's services stay reachable (`provideMerge`) for the host's other code.
 */
export const hostLayer = (options: HostOptions) =>
  Layer.effect(Swatches, makeSwatches(options.comfyuiUrl)).pipe(
    Layer.provideMerge(wesLayer(options.wes).pipe(Layer.provide(Layer.span("wes")))),
    // provideMerge: the host's own code runs on its logger and tracer too, not only WES's layers.
    Layer.provideMerge(hostTelemetry(options.telemetry))
  )

const main = async () => {
  const comfyui = await comfyuiFromEnv()
  const program = Effect.gen(function*() {
    const swatches = yield* Swatches
    const workflow = yield* swatches.create(0xff8800, 128)
    const { bytes, filename } = yield* swatches.image(workflow.id)
    const out = process.env["OUT"] ?? "swatch.png"
    yield* Effect.tryPromise({ try: () => writeFile(out, bytes), catch: (e) => new SwatchFailed({ message: `could not write ${out}: ${String(e)}` }) })
    yield* Effect.logInfo(`workflow ${workflow.id}: ${filename} (${bytes.length} bytes) -> ${out}`)
  })
  // `Effect.provide(layer)` builds the layers in this program's scope: when the program ends, WES stops.
  const exit = await Effect.runPromiseExit(program.pipe(Effect.provide(hostLayer({
    comfyuiUrl: comfyui.url,
    wes: { databaseUrl: process.env["DATABASE_URL"] },
    telemetry: { log: (line) => console.log(JSON.stringify(line)) }
  }))))
  await comfyui.close()
  if (Exit.isFailure(exit)) {
    console.error(Cause.pretty(exit.cause))
    process.exitCode = 1
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) void main()
