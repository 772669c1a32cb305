/**
 * Request and response bodies of the agent's own routes: a request body is read up to a bound
 * (1 MiB: the largest legitimate one, a cleanup of a run with many outputs, is far smaller) and
 * decoded with the protocol's schema; anything else is answered 400/413 with a JSON
 * `{"message": ...}` saying what was wrong, the one error shape of every agent route.
 */
import type * as http2 from "node:http2"
import * as Cause from "effect/Cause"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"

export const MAX_REQUEST_BYTES = 1024 * 1024

/** The request was refused; `status` and `message` are the answer. */
export class BadRequest extends Error {
  readonly _tag = "BadRequest"
  constructor(readonly status: 400 | 413, message: string) {
    super(message)
  }
}

/** The whole body, or BadRequest(413) past `limit` bytes (the stream is then reset). */
export const readBody = (stream: http2.ServerHttp2Stream, limit = MAX_REQUEST_BYTES): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > limit) {
        stream.off("data", onData)
        stream.pause()
        reject(new BadRequest(413, `the request body is larger than ${limit} bytes`))
        return
      }
      chunks.push(chunk)
    }
    stream.on("data", onData)
    stream.once("end", () => resolve(Buffer.concat(chunks)))
    stream.once("error", reject)
    stream.once("aborted", () => reject(new Error("the request was aborted")))
  })

/** The body decoded as JSON by `schema`, or BadRequest(400) naming the problem. */
export const decodeBody = <A>(schema: Schema.Decoder<A>) => {
  const decode = Schema.decodeUnknownExit(schema, { errors: "all" })
  return (body: Buffer): A => {
    let json: unknown
    try {
      json = JSON.parse(body.toString("utf8"))
    } catch {
      throw new BadRequest(400, "the request body is not JSON")
    }
    const exit = decode(json)
    if (Exit.isSuccess(exit)) return exit.value
    const error = Cause.squash(exit.cause)
    const detail = (error instanceof Error ? error.message : String(error)).split("\n").slice(0, 6).join(" ")
    throw new BadRequest(400, `the request body is not valid: ${detail}`)
  }
}

export const respondJson = (stream: http2.ServerHttp2Stream, status: number, body: unknown): void => {
  if (stream.destroyed || stream.headersSent) return
  const text = JSON.stringify(body)
  stream.respond({ ":status": status, "content-type": "application/json", "content-length": Buffer.byteLength(text) })
  stream.end(text)
}

export const respondError = (stream: http2.ServerHttp2Stream, status: number, message: string): void =>
  respondJson(stream, status, { message })
