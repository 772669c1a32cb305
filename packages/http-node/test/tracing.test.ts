/**
 * Issue 18: OpenTelemetry tracing switched on by the standard OTLP variables. A `wes serve`
 * (PostgreSQL store) started with OTEL_EXPORTER_OTLP_ENDPOINT pointing at a small OTLP/HTTP
 * receiver (JSON) sends it a span per request, named by method and declared route, with the
 * service name and its SQL statements as children; probes and the dispatcher's background work
 * are not traced. Without the variables (or with OTEL_SDK_DISABLED) tracing is off.
 */
import { FakeComfyUI } from "@wes/runner-client/testing"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { describe, expect, it } from "vitest"
import { TracingConfig } from "../src/Tracing.js"
import { addRunner, createUser, startInstance } from "./instances.js"
import { poll } from "./polling.js"
import { processSuite } from "./process-suite.js"

interface OtlpValue {
  readonly stringValue?: string
  readonly intValue?: number | string
}
interface OtlpSpan {
  readonly name: string
  readonly traceId: string
  readonly parentSpanId?: string | null
  readonly attributes?: ReadonlyArray<{ readonly key: string; readonly value: OtlpValue }>
}
interface OtlpExport {
  readonly resourceSpans: ReadonlyArray<{
    readonly resource?: { readonly attributes?: ReadonlyArray<{ readonly key: string; readonly value: OtlpValue }> }
    readonly scopeSpans: ReadonlyArray<{ readonly spans: ReadonlyArray<OtlpSpan> }>
  }>
}

/** An OTLP/HTTP traces receiver (JSON): keeps every export POSTed to /v1/traces. */
const startReceiver = async () => {
  const exports: Array<OtlpExport> = []
  const contentTypes: Array<string> = []
  const server: Server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/v1/traces") {
        res.writeHead(404).end()
        return
      }
      contentTypes.push(req.headers["content-type"] ?? "")
      exports.push(JSON.parse(Buffer.concat(chunks).toString("utf8")) as OtlpExport)
      res.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${port}`,
    exports,
    contentTypes,
    spans: () => exports.flatMap((e) => e.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans))),
    serviceNames: () =>
      exports.flatMap((e) => e.resourceSpans.flatMap((r) => (r.resource?.attributes ?? []).filter((a) => a.key === "service.name").map((a) => a.value.stringValue))),
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

const suite = processSuite()

const read = (env: Record<string, string>) =>
  Effect.runSync(Effect.result(Effect.provideService(TracingConfig, ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(env))))

describe("OpenTelemetry tracing", () => {
  it("is off unless an OTLP endpoint is set, and reads the standard variables", () => {
    expect(read({})).toEqual(Result.succeed(Option.none()))
    expect(read({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "true" })).toEqual(Result.succeed(Option.none()))
    expect(read({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/" })).toEqual(Result.succeed(Option.some({
      url: "http://collector:4318/v1/traces",
      protocol: "http/protobuf",
      headers: {},
      serviceName: "wes"
    })))
    expect(read({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318",
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://traces.example/custom",
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer%20abc, x-team=ml",
      OTEL_SERVICE_NAME: "wes-eu"
    })).toEqual(Result.succeed(Option.some({
      url: "https://traces.example/custom",
      protocol: "http/json",
      headers: { authorization: "Bearer abc", "x-team": "ml" },
      serviceName: "wes-eu"
    })))
    for (const bad of [{ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" }, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }, {
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://c",
      OTEL_EXPORTER_OTLP_HEADERS: "novalue"
    }]) {
      expect(Result.isFailure(read(bad))).toBe(true)
    }
  })

  it("exports a span per request, named by method and route, to the OTLP endpoint", async () => {
    const receiver = suite.closeAfter(await startReceiver())
    const db = await suite.database()
    const wes = await startInstance("traced", db.url(), {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_SERVICE_NAME: "wes-under-test"
    })
    const user = await createUser(wes)
    // A runner: its driver works in the background (connects, reads, claims), untraced.
    const fake = suite.closeAfter(await FakeComfyUI.start())
    await addRunner(wes, user, "r", fake.url)
    expect((await wes.fetch("/v1/user", { headers: user.auth })).status).toBe(200)
    expect((await wes.fetch("/healthz")).status).toBe(200)
    const span = await poll(() => `a span "GET /v1/user" (got ${JSON.stringify(receiver.spans().map((s) => s.name))})`, async () =>
      receiver.spans().find((s) => s.name === "GET /v1/user"), 20_000, 100)
    expect(span.traceId).toMatch(/^[0-9a-f]{32}$/)
    expect(span.attributes).toContainEqual({ key: "http.route", value: { stringValue: "/v1/user" } })
    expect(receiver.serviceNames()).toContain("wes-under-test")
    expect(receiver.contentTypes.every((t) => t.startsWith("application/json"))).toBe(true)
    // Probes are not traced.
    expect(receiver.spans().map((s) => s.name)).not.toContain("GET /healthz")
    // Every trace starts at a request: the runner's probe at its creation is a child of
    // POST /v1/runner; the background work of the dispatcher makes no spans.
    const roots = receiver.spans().filter((s) => s.parentSpanId === undefined || s.parentSpanId === null || s.parentSpanId === "")
    expect(roots.map((s) => s.name).filter((n) => !/^(GET|POST|PUT|PATCH|DELETE) \//.test(n))).toEqual([])
    // The request's SQL statements are its children.
    expect(receiver.spans().some((s) => s.parentSpanId !== undefined && s.parentSpanId !== null && s.parentSpanId !== "")).toBe(true)
  }, 60_000)
})
