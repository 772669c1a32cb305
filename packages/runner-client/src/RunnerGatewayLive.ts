/** `RunnerGateway` over ComfyUI's HTTP API and WebSocket. */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import { RunnerGateway } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { type ComfyClientOptions, makeComfyClient } from "./ComfyClient.js"
import { type RunnerConnectionOptions, runnerEvents } from "./RunnerConnection.js"

/** Every knob of the gateway: HTTP timeouts and uploads, WebSocket heartbeat, backoff and buffers. */
export interface RunnerGatewayOptions extends ComfyClientOptions, RunnerConnectionOptions {}

/** Builds the gateway on the `HttpClient` in context. */
export const makeRunnerGateway = (
  options: RunnerGatewayOptions = {}
): Effect.Effect<RunnerGateway["Type"], never, HttpClient.HttpClient> =>
  Effect.map(HttpClient.HttpClient, (http) => {
    const client = makeComfyClient(http, options)
    return RunnerGateway.of({
      ...client,
      events: (runner, clientId) => runnerEvents(runner, clientId, options)
    })
  })

/** The gateway, given an `HttpClient` (the WebSocket side uses the `ws` package). */
export const RunnerGatewayLive = (options: RunnerGatewayOptions = {}): Layer.Layer<RunnerGateway, never, HttpClient.HttpClient> =>
  Layer.effect(RunnerGateway, makeRunnerGateway(options))

/** The gateway on Node: `RunnerGatewayLive` with undici's HTTP client. */
export const RunnerGatewayNode = (options: RunnerGatewayOptions = {}): Layer.Layer<RunnerGateway> =>
  RunnerGatewayLive(options).pipe(Layer.provide(NodeHttpClient.layerUndici))
