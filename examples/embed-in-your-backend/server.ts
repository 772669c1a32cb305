/**
 * An existing Node service (plain `node:http`, no framework, no @wes/http-node) that runs ComfyUI
 * work through WES's use-case services. Its own routes:
 *
 *   POST /swatches            {"color": "#ff8800", "size": 128}  -> 202 {id, status, image}
 *   GET  /swatches/:id        -> the workflow's status
 *   GET  /swatches/:id/image  -> follows the workflow to completion, then streams the PNG
 *
 * Run: `pnpm --filter @wes/example-embed-in-your-backend start` (PORT, COMFYUI_URL, DATABASE_URL).
 */
import { AccountService, RunnerService, type User, WorkflowService } from "@wes/core"
import * as Effect from "effect/Effect"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Stream from "effect/Stream"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { Readable } from "node:stream"
import { pathToFileURL } from "node:url"
import { comfyuiFromEnv } from "./comfyui.js"
import { parseColor, swatchWorkflow } from "./workflow.js"
import { type WesSettings, wesLayer } from "./wes.js"

export interface BackendOptions {
  /** Default 0: a free port. */
  readonly port?: number
  readonly host?: string
  /** The ComfyUI this service registers as its runner. */
  readonly comfyuiUrl: string
  /** Sent with every request to the runner, e.g. `{ Authorization: "Bearer ..." }` for a proxy in front of ComfyUI. */
  readonly runnerHeaders?: Record<string, string>
  /** Reuse this WES user (with PostgreSQL, keep its id between restarts); default: a new one. */
  readonly wesUserId?: string | undefined
  readonly wes?: WesSettings
  readonly log?: (line: string) => void
}

export interface Backend {
  readonly url: string
  readonly close: () => Promise<void>
}

class HttpError extends Error {
  constructor(readonly status: number, message: string) {
    super(message)
  }
}

/** WES's typed errors (`_tag`) as this service's HTTP answers. */
const statusOf = (error: { readonly _tag: string }): number => {
  switch (error._tag) {
    case "ValidationError":
      return 400
    case "WorkflowNotFound":
    case "OutputNotFound":
      return 404
    case "Conflict":
      return 409
    case "TierLimitExceeded":
      return 429
    case "NoEligibleRunner":
    case "StorageError":
      return 503
    default:
      return 500
  }
}

const readJson = async (req: IncomingMessage): Promise<Record<string, unknown>> => {
  let text = ""
  for await (const chunk of req) {
    text += String(chunk)
    if (text.length > 64 * 1024) throw new HttpError(413, "body too large")
  }
  try {
    const parsed: unknown = JSON.parse(text === "" ? "{}" : text)
    if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) return parsed as Record<string, unknown>
  } catch {
    // answered below
  }
  throw new HttpError(400, "body must be a JSON object")
}

const sendJson = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body))
}

export const startBackend = async (options: BackendOptions): Promise<Backend> => {
  const log = options.log ?? ((line: string) => console.log(line))
  // Every WES service, started once for the life of this process (the dispatcher runs in it).
  const runtime = ManagedRuntime.make(wesLayer(options.wes))
  /** Runs an effect; rejects with its typed failure itself (WES's errors, with `_tag`). */
  const run = <A, E>(effect: Effect.Effect<A, E, ManagedRuntime.ManagedRuntime.Services<typeof runtime>>) => runtime.runPromise(effect)

  // This service acts as one WES user with one runner. A multi-tenant backend keeps a WES user id
  // next to each of its own users (AccountService.createUser once, then getUser).
  const user: User = await run(Effect.gen(function*() {
    const accounts = yield* AccountService
    const runners = yield* RunnerService
    const me = options.wesUserId === undefined
      ? yield* accounts.createUser({ tier: "pro" })
      : yield* accounts.getUser(options.wesUserId)
    const existing = yield* runners.list(me, { per_page: 100 })
    if (!existing.items.some((r) => r.endpoint === options.comfyuiUrl)) {
      yield* runners.create(me, { name: "comfyui", endpoint: options.comfyuiUrl, headers: options.runnerHeaders ?? {} })
    }
    return me
  }))

  const createSwatch = (body: Record<string, unknown>) =>
    Effect.gen(function*() {
      const color = parseColor(body["color"] ?? "#000000")
      const size = body["size"] ?? 256
      if (color === undefined) return yield* Effect.fail(new HttpError(400, "color must be like #ff8800"))
      if (typeof size !== "number" || !Number.isInteger(size) || size < 1 || size > 4096) {
        return yield* Effect.fail(new HttpError(400, "size must be an integer from 1 to 4096"))
      }
      const workflows = yield* WorkflowService
      const workflow = yield* workflows.create(user, {
        name: `swatch ${String(body["color"] ?? "#000000")}`,
        workflow_json: swatchWorkflow,
        params: [
          { field: "$color", value: { _tag: "Text", text: String(color) } },
          { field: "$size", value: { _tag: "Text", text: String(size) } }
        ]
      })
      return { id: workflow.id, status: workflow.status, image: `/swatches/${workflow.id}/image` }
    })

  /** Follows the workflow's events until `done`, then opens its first output. */
  const finishedImage = (id: string) =>
    Effect.gen(function*() {
      const workflows = yield* WorkflowService
      const events = yield* workflows.follow(user, id)
      yield* Stream.runForEach(events, (e) => Effect.sync(() => log(`swatch ${id}: ${e.type} ${JSON.stringify(e.data)}`)))
      const finished = yield* workflows.get(user, id)
      if (finished.status !== "completed") {
        return yield* Effect.fail(new HttpError(422, `workflow ${finished.status}: ${finished.exception_message ?? "no output"}`))
      }
      const [first] = yield* workflows.outputs(user, id)
      if (first === undefined) return yield* Effect.fail(new HttpError(422, "the workflow produced no file"))
      return yield* workflows.openOutput(user, id, first.id)
    })

  const route = async (req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? "/", "http://localhost").pathname
    const parts = path.split("/").filter((p) => p !== "")
    if (req.method === "POST" && path === "/swatches") {
      return sendJson(res, 202, await run(createSwatch(await readJson(req))))
    }
    if (req.method === "GET" && parts[0] === "swatches" && parts.length === 2) {
      const w = await run(Effect.flatMap(WorkflowService, (s) => s.get(user, parts[1]!)))
      return sendJson(res, 200, { id: w.id, status: w.status, error: w.exception_message })
    }
    if (req.method === "GET" && parts[0] === "swatches" && parts[2] === "image" && parts.length === 3) {
      const { blob, output } = await run(finishedImage(parts[1]!))
      res.writeHead(200, { "content-type": blob.content_type, "content-length": blob.size, "x-filename": output.filename })
      Readable.from(Stream.toAsyncIterable(blob.stream)).pipe(res)
      return
    }
    sendJson(res, 404, { error: "not found" })
  }

  const server = createServer((req, res) => {
    route(req, res).catch((e: unknown) => {
      const error = toHttpError(e)
      if (error.status === 500) log(`${req.method} ${req.url}: ${String(e)}`)
      if (!res.headersSent) sendJson(res, error.status, { error: error.message })
      else res.destroy()
    })
  })
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, options.host ?? "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://${options.host ?? "127.0.0.1"}:${port}`,
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()))
      // Stops the dispatcher (releasing its runners) and closes the store.
      await runtime.dispose()
    }
  }
}

/** A failure as this service's answer: its own HttpError, or WES's typed errors by `_tag`. */
const toHttpError = (e: unknown): HttpError => {
  if (e instanceof HttpError) return e
  if (e instanceof Error && "_tag" in e && typeof e._tag === "string") return new HttpError(statusOf({ _tag: e._tag }), e.message)
  return new HttpError(500, "internal error")
}

const main = async () => {
  const comfyui = await comfyuiFromEnv()
  const backend = await startBackend({
    port: Number(process.env["PORT"] ?? 3000),
    comfyuiUrl: comfyui.url,
    wesUserId: process.env["WES_USER_ID"],
    wes: { databaseUrl: process.env["DATABASE_URL"] }
  })
  console.log(`Listening on ${backend.url}. Try:
  ID=$(curl -s -X POST ${backend.url}/swatches -H 'content-type: application/json' -d '{"color":"#ff8800","size":128}' | sed -E 's/.*"id":"([^"]+)".*/\\1/')
  curl -s ${backend.url}/swatches/$ID/image -o swatch.png && file swatch.png`)
  const stop = () => {
    void backend.close().then(() => comfyui.close())
  }
  process.once("SIGINT", stop)
  process.once("SIGTERM", stop)
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  main().catch((e: unknown) => {
    console.error(e)
    process.exitCode = 1
  })
}
