/**
 * OpenTelemetry tracing, switched on by the standard OTLP variables (docs/configuration.md):
 * spans go to an OTLP/HTTP collector through effect's own exporter (effect/observability's
 * OtlpTracer, on effect's HttpClient; none of the OpenTelemetry SDK is loaded). Unset, the tracer is
 * disabled: no span is built at all (`untraced`, measured in docs/decisions.md).
 *
 *   OTEL_EXPORTER_OTLP_TRACES_ENDPOINT  full URL of the traces endpoint, used as is
 *   OTEL_EXPORTER_OTLP_ENDPOINT         base URL; traces go to `<base>/v1/traces`
 *   OTEL_EXPORTER_OTLP_PROTOCOL         http/protobuf (default) or http/json
 *   OTEL_EXPORTER_OTLP_HEADERS          `key=value,key2=value2` sent with every export
 *   OTEL_SERVICE_NAME                   the resource's service.name (default `wes`)
 *   OTEL_SDK_DISABLED=true              off, whatever else is set
 */
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as Layer from "effect/Layer"
import * as OtlpSerialization from "effect/observability/OtlpSerialization"
import * as OtlpTracer from "effect/observability/OtlpTracer"
import * as Option from "effect/Option"
import * as References from "effect/References"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { invalidConfig } from "./Startup.js"

export interface TracingConfig {
  /** Where spans are POSTed. */
  readonly url: string
  readonly protocol: "http/protobuf" | "http/json"
  readonly headers: Readonly<Record<string, string>>
  readonly serviceName: string
}

/** `key=value,key2=value2` (values percent-decoded), as the OTLP exporter specification reads it. */
export const parseOtlpHeaders = (s: string): Result.Result<Record<string, string>, string> => {
  const headers: Record<string, string> = {}
  for (const part of s.split(",")) {
    if (part.trim() === "") continue
    const eq = part.indexOf("=")
    if (eq <= 0) return Result.fail(`OTEL_EXPORTER_OTLP_HEADERS: "${part.trim()}" is not key=value`)
    try {
      headers[part.slice(0, eq).trim()] = decodeURIComponent(part.slice(eq + 1).trim())
    } catch {
      return Result.fail(`OTEL_EXPORTER_OTLP_HEADERS: the value of "${part.slice(0, eq).trim()}" is not percent-encoded`)
    }
  }
  return Result.succeed(headers)
}

const httpUrl = (name: string) =>
  Config.schema(
    Schema.String.check(Schema.makeFilter((s: string) => URL.canParse(s) && ["http:", "https:"].includes(new URL(s).protocol), {
      message: `${name} must be an http:// or https:// URL`
    })),
    name
  )

/** The tracing settings, or none when tracing is off. */
export const TracingConfig: Config.Config<Option.Option<TracingConfig>> = Config.all({
  disabled: Config.Boolean("OTEL_SDK_DISABLED").pipe(Config.withDefault(false)),
  traces: Config.option(httpUrl("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")),
  base: Config.option(httpUrl("OTEL_EXPORTER_OTLP_ENDPOINT")),
  protocol: Config.Literals(["http/protobuf", "http/json"], "OTEL_EXPORTER_OTLP_PROTOCOL").pipe(Config.withDefault("http/protobuf" as const)),
  headers: Config.String("OTEL_EXPORTER_OTLP_HEADERS").pipe(
    Config.withDefault(""),
    Config.mapEffect((s) =>
      Effect.mapError(Effect.fromResult(parseOtlpHeaders(s)), (message) => invalidConfig("OTEL_EXPORTER_OTLP_HEADERS", message)))
  ),
  serviceName: Config.String("OTEL_SERVICE_NAME").pipe(Config.withDefault("wes"))
}).pipe(Config.map(({ base, disabled, headers, protocol, serviceName, traces }) => {
  const url = Option.orElse(traces, () => Option.map(base, (b) => `${b.replace(/\/+$/, "")}/v1/traces`))
  return disabled ? Option.none() : Option.map(url, (url): TracingConfig => ({ url, protocol, headers, serviceName }))
}))

/**
 * Tracing off for everything the server runs. Without an exporter Effect would still build one
 * span per runner HTTP call (with its attributes and a traceparent header) and per SQL
 * statement: about 10 % of a workflow's CPU in the dispatch benchmark (docs/decisions.md).
 */
export const untraced: Layer.Layer<never> = Layer.succeed(References.TracerEnabled, false)

/** The tracer `config` asks for: spans exported over OTLP/HTTP, or none at all. */
export const tracingLayer = (config: Option.Option<TracingConfig>, serviceVersion?: string): Layer.Layer<never> =>
  Option.match(config, {
    onNone: () => untraced,
    onSome: (c) =>
      OtlpTracer.layer({ url: c.url, headers: c.headers, resource: { serviceName: c.serviceName, serviceVersion } }).pipe(
        Layer.provide(c.protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf),
        Layer.provide(FetchHttpClient.layer)
      )
  })
