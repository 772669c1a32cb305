/**
 * The agent's own routes, under the HTTP/2 server WES drives: `GET /status`, `POST /provision`
 * (NDJSON progress lines ending with one `done` or `failed`) and `POST /cleanup`. Request bodies
 * are bounded and decoded with the protocol's schemas (`Body.ts`); a folder a request needs but
 * the agent was not given is a 409 naming the flag; an unknown path 404, a wrong method 405.
 */
import type * as http2 from "node:http2"
import {
  AGENT_CLEANUP_PATH,
  AGENT_PROVISION_PATH,
  AGENT_STATUS_PATH,
  CleanupRequest,
  type CleanupResult,
  ProvisionLine,
  ProvisionRequest
} from "@wes/runner-client/agent-protocol"
import type { AgentStatus } from "@wes/core"
import { BadRequest, decodeBody, readBody, respondError, respondJson } from "./Body.js"
import { type AgentLog, describe } from "./Log.js"
import { FolderNotConfigured } from "./Options.js"

export interface Routes {
  readonly status: () => Promise<AgentStatus>
  /** Places the models, reporting each line; settles after its last (`done` or `failed`) line. */
  readonly provision: (request: ProvisionRequest, onLine: (line: ProvisionLine) => void, signal: AbortSignal) => Promise<void>
  readonly cleanup: (request: CleanupRequest) => Promise<CleanupResult>
}

/** Progress lines are dropped while this much is queued for WES (it is not reading): they are lossy. */
const PROGRESS_BACKLOG_BYTES = 64 * 1024

const decodeProvision = decodeBody(ProvisionRequest)
const decodeCleanup = decodeBody(CleanupRequest)

const METHODS: Readonly<Record<string, string>> = {
  [AGENT_STATUS_PATH]: "GET",
  [AGENT_PROVISION_PATH]: "POST",
  [AGENT_CLEANUP_PATH]: "POST"
}

const provision = async (routes: Routes, stream: http2.ServerHttp2Stream, log: AgentLog): Promise<void> => {
  const request = decodeProvision(await readBody(stream))
  stream.respond({ ":status": 200, "content-type": "application/x-ndjson" })
  let last: ProvisionLine | undefined
  const write = (line: ProvisionLine) => {
    if (line.type === "failed") log("warn", `provisioning failed: ${line.message}`)
    if (stream.destroyed || stream.writableEnded) return
    if (line.type === "progress" && stream.writableLength > PROGRESS_BACKLOG_BYTES) return
    last = line
    stream.write(`${JSON.stringify(line)}\n`)
  }
  // WES went away (the stream reset, the connection lost): the download stops, its partial file
  // stays for the next request to resume.
  const abandoned = new AbortController()
  stream.once("close", () => abandoned.abort())
  try {
    await routes.provision(request, write, abandoned.signal)
    // Without its final line the outcome is unknown: failed, never a guessed done.
    if (last?.type !== "done" && last?.type !== "failed" && !abandoned.signal.aborted) {
      write({ type: "failed", filename: request.models[0]?.filename ?? "", message: "provisioning ended without a result" })
    }
  } catch (e) {
    if (last?.type !== "done" && last?.type !== "failed") {
      write({ type: "failed", filename: request.models[0]?.filename ?? "", message: describe(e) })
    }
  }
  if (!stream.destroyed) stream.end()
}

export const serveRoute = async (
  routes: Routes,
  stream: http2.ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
  log: AgentLog
): Promise<void> => {
  const path = headers[":path"] ?? ""
  const method = headers[":method"] ?? ""
  const allowed = METHODS[path]
  try {
    if (allowed === undefined) return respondError(stream, 404, `no route ${path} on the agent`)
    if (allowed !== method) return respondError(stream, 405, `${path} takes ${allowed}`)
    if (path === AGENT_STATUS_PATH) return respondJson(stream, 200, await routes.status())
    if (path === AGENT_CLEANUP_PATH) return respondJson(stream, 200, await routes.cleanup(decodeCleanup(await readBody(stream))))
    return await provision(routes, stream, log)
  } catch (e) {
    if (e instanceof BadRequest) {
      respondError(stream, e.status, e.message)
      // The rest of an oversized body is not wanted: once the answer is out, a reset with
      // NO_ERROR tells WES to stop sending it (RFC 9113, 8.1).
      if (e.status === 413) stream.close()
      return
    }
    if (e instanceof FolderNotConfigured) return respondError(stream, 409, e.message)
    throw e
  }
}
