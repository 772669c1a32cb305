/**
 * The agents connected to this instance (issue 34): one HTTP/2 session per runner, over the
 * WebSocket its `wes-agent` dialled (AgentEndpoint.ts, AgentConnection.ts). The gateway reaches an
 * agent runner's ComfyUI through `sessions` (runner-client's AgentTunnel.ts); `RunnerAgents`
 * (AgentRunnerAgents.ts) calls the agent itself. A newer connection for a runner replaces the
 * older, which is closed with CLOSE_REPLACED; every connection is closed (1001) when the hub's
 * scope closes.
 */
import type { ClientHttp2Session } from "node:http2"
import { CLOSE_REPLACED, CLOSE_SHUTDOWN } from "@wes/runner-client/agent-protocol"
import type { AgentSessions } from "@wes/runner-client"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/** One agent's live connection. */
export interface AgentLink {
  readonly runnerId: string
  readonly tokenId: string
  readonly session: ClientHttp2Session
  /** Closes the WebSocket (once; later calls do nothing). */
  readonly close: (code: number, reason: string) => void
}

/** The hub's bounds and timings; every one has a production default. */
export interface AgentHubOptions {
  /** Presence lease; the token is checked again and the presence renewed every third of it (default 15 s). */
  readonly leaseTime?: Duration.Input | undefined
  /** How often the agent's `/status` is read (default 10 s). */
  readonly statusInterval?: Duration.Input | undefined
  /** Limit of one call to the agent's own endpoints, `/status` and `/cleanup` (default 30 s). */
  readonly callTimeout?: Duration.Input | undefined
  /** Provisioning may go this long without a line from the agent (default 5 minutes). */
  readonly provisionIdleTimeout?: Duration.Input | undefined
  /** Largest WebSocket message taken from an agent (default 8 MiB). */
  readonly maxMessageBytes?: number | undefined
  /** Largest `/status` or `/cleanup` answer, and provisioning line (default 1 MiB). */
  readonly maxAnswerBytes?: number | undefined
  /** Handshakes being authenticated at once; more are answered 503 (default 256). */
  readonly maxPendingHandshakes?: number | undefined
}

export interface AgentHubSettings {
  readonly leaseMs: number
  readonly statusMs: number
  readonly callMs: number
  readonly provisionIdleMs: number
  readonly maxMessageBytes: number
  readonly maxAnswerBytes: number
  readonly maxPendingHandshakes: number
}

const ms = (d: Duration.Input | undefined, fallback: Duration.Input) => Duration.toMillis(Duration.fromInputUnsafe(d ?? fallback))

export const agentHubSettings = (o: AgentHubOptions = {}): AgentHubSettings => ({
  leaseMs: ms(o.leaseTime, Duration.seconds(15)),
  statusMs: ms(o.statusInterval, Duration.seconds(10)),
  callMs: ms(o.callTimeout, Duration.seconds(30)),
  provisionIdleMs: ms(o.provisionIdleTimeout, Duration.minutes(5)),
  maxMessageBytes: o.maxMessageBytes ?? 8 * 1024 * 1024,
  maxAnswerBytes: o.maxAnswerBytes ?? 1024 * 1024,
  maxPendingHandshakes: o.maxPendingHandshakes ?? 256
})

export class AgentHub extends Context.Service<AgentHub, {
  readonly settings: AgentHubSettings
  /** For the gateway: the live session of a runner's agent here. */
  readonly sessions: AgentSessions
  readonly link: (runnerId: string) => AgentLink | undefined
  /** Makes `link` its runner's connection, closing the one it replaces. */
  readonly register: (link: AgentLink) => void
  /** Forgets `link`; true when it was still its runner's connection (not replaced). */
  readonly unregister: (link: AgentLink) => boolean
}>()("@wes/http-node/AgentHub") {
  static layer = (options: AgentHubOptions = {}): Layer.Layer<AgentHub> =>
    Layer.effect(AgentHub, Effect.gen(function*() {
      const links = new Map<string, AgentLink>()
      const key = (runnerId: string) => runnerId.toLowerCase()
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          for (const link of links.values()) link.close(CLOSE_SHUTDOWN, "WES is shutting down")
          links.clear()
        }))
      const link = (runnerId: string) => links.get(key(runnerId))
      return AgentHub.of({
        settings: agentHubSettings(options),
        sessions: { session: (runnerId) => link(runnerId)?.session },
        link,
        register: (next) => {
          const previous = links.get(key(next.runnerId))
          links.set(key(next.runnerId), next)
          if (previous !== undefined && previous !== next) previous.close(CLOSE_REPLACED, "the runner's agent connected again")
        },
        unregister: (gone) => {
          if (links.get(key(gone.runnerId)) !== gone) return false
          links.delete(key(gone.runnerId))
          return true
        }
      })
    }))
}
