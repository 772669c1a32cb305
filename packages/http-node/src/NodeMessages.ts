/**
 * Node's own request and response under a request NodeHttpServer serves. The server is
 * node:http's (Server.ts), so they are http/1.1's `IncomingMessage` and `ServerResponse`.
 */
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import type { HttpServerRequest } from "effect/http/HttpServerRequest"
import { IncomingMessage, ServerResponse } from "node:http"

export interface NodeMessages {
  readonly req: IncomingMessage
  readonly res: ServerResponse
}

/** The request's node messages; a defect for a request of another server (an HTTP/2 one). */
export const nodeMessages = (request: HttpServerRequest): NodeMessages => {
  const req = NodeHttpServerRequest.toIncomingMessage(request)
  const res = NodeHttpServerRequest.toServerResponse(request)
  if (!(req instanceof IncomingMessage) || !(res instanceof ServerResponse)) throw new Error("expected a request of node:http's server")
  return { req, res }
}

/** Node's response to the request when node:http's server serves it (none for another server's). */
export const nodeResponseOf = (request: HttpServerRequest): ServerResponse | undefined => {
  const res: unknown = NodeHttpServerRequest.toServerResponse(request)
  return res instanceof ServerResponse ? res : undefined
}
