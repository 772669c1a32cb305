/**
 * The wait between two attempts to reach WES: exponential from `initialMs`, doubling up to
 * `maxMs`, each delay drawn uniformly from its upper half ("equal jitter"), so that agents cut
 * off together (a WES restart) do not all come back in the same instant, and none waits less
 * than half its step. A connection that stayed up `stableMs` starts the sequence again. How WES
 * closed a connection decides the next wait too (`closing`).
 */
import { CLOSE_REPLACED, CLOSE_SHUTDOWN, CLOSE_TOKEN_REVOKED } from "@wes/runner-client/agent-protocol"
import type { LogLevel } from "./Log.js"

export interface BackoffSettings {
  readonly initialMs: number
  readonly maxMs: number
  /** A connection open at least this long resets the attempt count. */
  readonly stableMs: number
}

export const DEFAULT_BACKOFF: BackoffSettings = { initialMs: 500, maxMs: 30_000, stableMs: 30_000 }

/** The delay before attempt `attempt + 1` (`attempt` counts from 0). */
export const nextDelay = (settings: BackoffSettings, attempt: number, random: () => number = Math.random): number => {
  const step = Math.min(settings.maxMs, settings.initialMs * 2 ** Math.min(attempt, 30))
  return Math.round(step / 2 + random() * (step / 2))
}

/** The longest delay, the next step of the sequence, or the sequence from its start. */
export type Wait = "max" | "backoff" | "reset"

/**
 * What a close of an open connection means: a revoked token or a replacement by another agent
 * will not change soon (the longest wait, an error line); WES shutting down this instance's
 * connections (1001) is redialled at once, to reach another instance; anything else backs off.
 */
export const closing = (code: number, reason: string, stayedUp: boolean): { readonly wait: Wait; readonly level: LogLevel; readonly message: string } => {
  if (code === CLOSE_TOKEN_REVOKED) {
    return { wait: "max", level: "error", message: `WES closed the connection: the runner token was revoked${reason === "" ? "" : ` (${reason})`}` }
  }
  if (code === CLOSE_REPLACED) {
    return { wait: "max", level: "error", message: "WES closed the connection: another agent connected with this runner's token" }
  }
  if (code === CLOSE_SHUTDOWN) return { wait: "reset", level: "info", message: "WES is shutting down this connection; reconnecting" }
  return {
    wait: stayedUp ? "reset" : "backoff",
    level: "warn",
    message: `the connection to WES closed (code ${code}${reason === "" ? "" : `, ${reason}`})`
  }
}
