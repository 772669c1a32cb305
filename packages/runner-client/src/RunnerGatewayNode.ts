/**
 * `RunnerGateway` on Node: ComfyUI's HTTP API through undici (keep-alive `Agent`s, destroyed with
 * the layer) and its WebSocket through `ws`. With a `guard`, user runners are reached through
 * their own pool whose every connection goes only where the address policy allows, to the address
 * it checked (GuardedConnect.ts); managed runners (the operator's own) are not restricted. Agent
 * runners (issue 34) are reached through their agent's session when `agents` is given (AgentTunnel.ts).
 */
import { RunnerGateway, type RunnerTarget } from "@wes/core"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type { Agent } from "undici"
import { type ComfyClient, type ComfyClientOptions, makeComfyClient } from "./ComfyClient.js"
import { type AgentSessions, agentTarget, tunnelAgent } from "./AgentTunnel.js"
import { type AddressGuard, guardedAgent } from "./GuardedConnect.js"
import { type RunnerConnectionOptions, runnerEvents } from "./RunnerConnection.js"
import { millis } from "./RunnerHttp.js"

/** Every knob of the gateway: HTTP timeouts and uploads, WebSocket heartbeat, backoff and buffers. */
export interface RunnerGatewayOptions extends ComfyClientOptions, Omit<RunnerConnectionOptions, "guard" | "agents"> {
  /** User runners: connect only where this address policy allows (none: anywhere). */
  readonly guard?: AddressGuard | undefined
  /** Agent runners (`connection: "agent"`) are reached through their agent's session here (none: never reached). */
  readonly agents?: AgentSessions | undefined
}

/**
 * Idle connections are kept 10 s (or less when the runner's `Keep-Alive` says so): the driver
 * reconciles every 5 s, so a busy runner's calls reuse one connection.
 */
const KEEP_ALIVE_MS = 10_000

/** The connection pool to the runners, open while `Scope` is; in-flight requests are aborted when it closes. */
export const runnerAgent = (options: ComfyClientOptions = {}, guard?: AddressGuard): Effect.Effect<Agent, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() =>
      guardedAgent(guard, {
        // HTTP/1.1 only, as ComfyUI speaks it: undici 8 would take HTTP/2 from a TLS proxy that
        // offers it (its default changed), which changes connection reuse and the fence's timing.
        allowH2: false,
        keepAliveTimeout: KEEP_ALIVE_MS,
        connect: { timeout: millis(options.requestTimeout ?? Duration.seconds(30)) }
      })
    ),
    (agent) => Effect.promise(() => agent.destroy())
  )

/** The pool of agent runners' connections: every one a tunnel through the runner's agent (AgentTunnel.ts). */
const tunnelPool = (sessions: AgentSessions, options: ComfyClientOptions): Effect.Effect<Agent, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => tunnelAgent(sessions, millis(options.requestTimeout ?? Duration.seconds(30)), { allowH2: false, keepAliveTimeout: KEEP_ALIVE_MS })),
    (agent) => Effect.promise(() => agent.destroy())
  )

/** Builds the gateway; its connections live as long as `Scope`. */
export const makeRunnerGateway = (options: RunnerGatewayOptions = {}): Effect.Effect<RunnerGateway["Service"], never, Scope.Scope> =>
  Effect.gen(function*() {
    const { guard, agents, ...rest } = options
    const managed = makeComfyClient(yield* runnerAgent(rest), rest)
    const events: RunnerGateway["Service"]["events"] = (runner, clientId) =>
      runner.connection === "agent" && agents !== undefined
        ? runnerEvents(agentTarget(runner), clientId, { ...rest, agents })
        : runnerEvents(runner, clientId, runner.kind === "managed" ? rest : { ...rest, guard })
    if (guard === undefined && agents === undefined) return RunnerGateway.of({ ...managed, events })
    const user = guard === undefined ? managed : makeComfyClient(yield* runnerAgent(rest, guard), rest)
    const tunneled = agents === undefined ? undefined : makeComfyClient(yield* tunnelPool(agents, rest), rest)
    /** An operation of the client the runner is reached through: one comparison more for a direct runner. */
    const on = <A extends ReadonlyArray<unknown>, R>(op: (client: ComfyClient) => (runner: RunnerTarget, ...args: A) => R) => {
      const direct = op(managed)
      const guarded = op(user)
      const agent = tunneled === undefined ? undefined : op(tunneled)
      return (runner: RunnerTarget, ...args: A): R =>
        runner.connection === "agent" && agent !== undefined
          ? agent(agentTarget(runner), ...args)
          : runner.kind === "managed" ? direct(runner, ...args) : guarded(runner, ...args)
    }
    return RunnerGateway.of({
      probe: on((c) => c.probe),
      nodeReplacements: on((c) => c.nodeReplacements),
      objectInfo: on((c) => c.objectInfo),
      uploadInput: on((c) => c.uploadInput),
      submit: on((c) => c.submit),
      queue: on((c) => c.queue),
      history: on((c) => c.history),
      status: on((c) => c.status),
      cancel: on((c) => c.cancel),
      download: on((c) => c.download),
      events
    })
  })

/** The gateway on Node (undici for HTTP, `ws` for the WebSocket). */
export const RunnerGatewayNode = (options: RunnerGatewayOptions = {}): Layer.Layer<RunnerGateway> =>
  Layer.effect(RunnerGateway, makeRunnerGateway(options))
