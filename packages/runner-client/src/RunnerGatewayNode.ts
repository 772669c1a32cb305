/**
 * `RunnerGateway` on Node: ComfyUI's HTTP API through undici (one keep-alive `Agent` per gateway,
 * destroyed with the layer) and its WebSocket through `ws`.
 */
import { RunnerGateway } from "@wes/core"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import { Agent } from "undici"
import { type ComfyClientOptions, makeComfyClient } from "./ComfyClient.js"
import { type RunnerConnectionOptions, runnerEvents } from "./RunnerConnection.js"
import { millis } from "./RunnerHttp.js"

/** Every knob of the gateway: HTTP timeouts and uploads, WebSocket heartbeat, backoff and buffers. */
export interface RunnerGatewayOptions extends ComfyClientOptions, RunnerConnectionOptions {}

/**
 * Idle connections are kept 10 s (or less when the runner's `Keep-Alive` says so): the driver
 * reconciles every 5 s, so a busy runner's calls reuse one connection.
 */
const KEEP_ALIVE_MS = 10_000

/** The connection pool to the runners, open while `Scope` is; in-flight requests are aborted when it closes. */
export const runnerAgent = (options: ComfyClientOptions = {}): Effect.Effect<Agent, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() =>
      new Agent({
        // HTTP/1.1 only, as ComfyUI speaks it: undici 8 would take HTTP/2 from a TLS proxy that
        // offers it (its default changed), which changes connection reuse and the fence's timing.
        allowH2: false,
        keepAliveTimeout: KEEP_ALIVE_MS,
        connect: { timeout: millis(options.requestTimeout ?? Duration.seconds(30)) }
      })
    ),
    (agent) => Effect.promise(() => agent.destroy())
  )

/** Builds the gateway; its connections live as long as `Scope`. */
export const makeRunnerGateway = (options: RunnerGatewayOptions = {}): Effect.Effect<RunnerGateway["Service"], never, Scope.Scope> =>
  Effect.map(runnerAgent(options), (agent) =>
    RunnerGateway.of({
      ...makeComfyClient(agent, options),
      events: (runner, clientId) => runnerEvents(runner, clientId, options)
    }))

/** The gateway on Node (undici for HTTP, `ws` for the WebSocket). */
export const RunnerGatewayNode = (options: RunnerGatewayOptions = {}): Layer.Layer<RunnerGateway> =>
  Layer.effect(RunnerGateway, makeRunnerGateway(options))
