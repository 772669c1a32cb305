/**
 * The wire between `wes-agent` and WES (issue 34), one description for both sides.
 *
 * The agent dials out: one WebSocket to `AGENT_CONNECT_PATH` on WES, with its runner token as
 * `Authorization: Bearer <token>` and subprotocol `AGENT_SUBPROTOCOL`. WES answers 401 to a wrong
 * or revoked token before the upgrade, and closes an open connection with `CLOSE_TOKEN_REVOKED`
 * when its token is revoked, `CLOSE_REPLACED` when the same runner's agent connected again.
 *
 * Inside the WebSocket (its binary messages as one byte stream, `ws`'s `createWebSocketStream`)
 * runs cleartext HTTP/2 with the roles reversed: WES is the HTTP/2 client, the agent the server.
 * HTTP/2 gives the streams, their flow control (no stream can fill a buffer another waits
 * behind) and request/response semantics, from Node's own `http2`.
 * - `CONNECT` with `:authority` `COMFYUI_AUTHORITY`: the agent opens a TCP connection to its own
 *   ComfyUI (the only place it connects to; WES never names an address) and pipes both ways. WES
 *   speaks ComfyUI's HTTP and WebSocket over such streams exactly as to a direct runner.
 * - `GET AGENT_STATUS_PATH` -> `AgentStatus` (JSON).
 * - `POST AGENT_PROVISION_PATH` with `ProvisionRequest` -> NDJSON `ProvisionLine`s, ending with
 *   one `done` or `failed` line.
 * - `POST AGENT_CLEANUP_PATH` with `CleanupRequest` -> `CleanupResult` (JSON).
 * TLS is the WebSocket's (`wss://`); the HTTP/2 inside is not encrypted again.
 */
import { AgentStatus, ModelFiles, RUNNER_TOKEN_PREFIX } from "@wes/core"
import * as Schema from "effect/Schema"

export const AGENT_CONNECT_PATH = "/agent/v1/connect"
export const AGENT_SUBPROTOCOL = "wes-agent.h2.v1"
export const COMFYUI_AUTHORITY = "comfyui:80"
export const AGENT_STATUS_PATH = "/status"
export const AGENT_PROVISION_PATH = "/provision"
export const AGENT_CLEANUP_PATH = "/cleanup"
/** Runner tokens start with this, so a leaked one is recognisable (and never taken for an API token); core's RunnerToken.ts defines it. */
export { RUNNER_TOKEN_PREFIX }

/** WebSocket close codes WES sends. */
export const CLOSE_TOKEN_REVOKED = 4401
export const CLOSE_REPLACED = 4409
export const CLOSE_SHUTDOWN = 1001

export { AgentStatus }

export const ProvisionRequest = Schema.Struct({ models: ModelFiles })
export interface ProvisionRequest extends Schema.Schema.Type<typeof ProvisionRequest> {}

export const ProvisionLine = Schema.Union([
  Schema.Struct({
    type: Schema.Literal("progress"),
    folder: Schema.String,
    filename: Schema.String,
    bytes: Schema.Number,
    total: Schema.NullOr(Schema.Number)
  }),
  Schema.Struct({ type: Schema.Literal("done") }),
  Schema.Struct({ type: Schema.Literal("failed"), filename: Schema.String, message: Schema.String })
])
export type ProvisionLine = typeof ProvisionLine.Type

const FileRef = Schema.Struct({ filename: Schema.String, subfolder: Schema.String, type: Schema.String })
export const CleanupRequest = Schema.Struct({
  prompt_id: Schema.String,
  /** Output files as the history lists them (`type` output or temp). */
  outputs: Schema.Array(FileRef),
  /** Uploaded inputs (`type` input), by the name ComfyUI gave them. */
  inputs: Schema.Array(FileRef)
})
export interface CleanupRequest extends Schema.Schema.Type<typeof CleanupRequest> {}

export const CleanupResult = Schema.Struct({ deleted: Schema.Number, skipped: Schema.Number })
export interface CleanupResult extends Schema.Schema.Type<typeof CleanupResult> {}
