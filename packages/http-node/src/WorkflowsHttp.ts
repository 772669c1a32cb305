/** /v1/workflow: create, list, get, rerun, cancel, subscribe (SSE) and outputs. */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { toDetail, toSummary, WorkflowService } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { badRequest, toHttpError } from "./ApiErrors.js"
import { CurrentUser, WesApi } from "./Api.js"
import { readForm } from "./Form.js"
import { createWorkflowInput, rerunWorkflowInput } from "./FormInput.js"
import { SseHub } from "./SseHub.js"

const lastEventIdOf = (header: string | undefined) => {
  if (header === undefined || header.trim() === "") return Effect.succeed(undefined)
  return /^\d{1,15}$/.test(header.trim())
    ? Effect.succeed(Number(header.trim()))
    : Effect.fail(badRequest("Last-Event-ID: must be a non-negative integer (an event id)", [
      { field: "Last-Event-ID", message: "must be a non-negative integer" }
    ]))
}

const contentDisposition = (filename: string) => `attachment; filename="${filename.replace(/[^\x20-\x7e]|["\\]/g, "_")}"`

export const workflowsHttp = HttpApiBuilder.group(WesApi, "workflows", (handlers) =>
    Effect.gen(function*() {
      const workflows = yield* WorkflowService
      const hub = yield* SseHub
      return handlers
        .handleRaw("create", ({ request }) =>
          Effect.gen(function*() {
            const { user } = yield* CurrentUser
            const form = yield* readForm(request)
            const input = yield* createWorkflowInput(form, request.headers["idempotency-key"])
            return toSummary(yield* workflows.create(user, input).pipe(Effect.mapError(toHttpError)))
          }).pipe(Effect.scoped))
        .handle("list", ({ urlParams }) =>
          Effect.flatMap(CurrentUser, ({ user }) =>
            workflows.list(user, urlParams).pipe(
              Effect.map((page) => ({ workflows: page.items, total: page.total })),
              Effect.mapError(toHttpError)
            )))
        .handle("get", ({ path }) =>
          Effect.flatMap(CurrentUser, ({ user }) => workflows.get(user, path.id).pipe(Effect.map(toDetail), Effect.mapError(toHttpError))))
        .handleRaw("rerun", ({ path, request }) =>
          Effect.gen(function*() {
            const { user } = yield* CurrentUser
            const form = yield* readForm(request)
            const input = yield* rerunWorkflowInput(form, request.headers["idempotency-key"])
            return toSummary(yield* workflows.rerun(user, path.id, input).pipe(Effect.mapError(toHttpError)))
          }).pipe(Effect.scoped))
        .handle("cancel", ({ path }) =>
          Effect.flatMap(CurrentUser, ({ user }) => workflows.cancel(user, path.id).pipe(Effect.map(toSummary), Effect.mapError(toHttpError))))
        .handleRaw("subscribe", ({ path, request }) =>
          Effect.gen(function*() {
            const { user } = yield* CurrentUser
            const lastEventId = yield* lastEventIdOf(request.headers["last-event-id"])
            const start = yield* workflows.followStart(user, path.id, lastEventId).pipe(Effect.mapError(toHttpError))
            return HttpServerResponse.raw(yield* hub.open(path.id, start), {
              contentType: "text/event-stream",
              headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
            })
          }))
        .handle("outputs", ({ path }) =>
          Effect.flatMap(CurrentUser, ({ user }) =>
            workflows.outputs(user, path.id).pipe(
              Effect.map((outputs) => ({
                outputs: outputs.map((o) => ({
                  id: o.id,
                  node_id: o.node_id,
                  filename: o.filename,
                  subfolder: o.subfolder,
                  type: o.type,
                  content_type: o.content_type,
                  size: o.size
                }))
              })),
              Effect.mapError(toHttpError)
            )))
        .handleRaw("output", ({ path }) =>
          Effect.gen(function*() {
            const { user } = yield* CurrentUser
            const { blob, output } = yield* workflows.openOutput(user, path.id, path.output_id).pipe(Effect.mapError(toHttpError))
            return HttpServerResponse.stream(
              blob.stream.pipe(Stream.tapError((e) => Effect.logError("output stream failed", { output_id: output.id, error: e.message }))),
              {
                contentType: blob.content_type,
                contentLength: blob.size,
                headers: { "content-disposition": contentDisposition(output.filename), "x-content-type-options": "nosniff" }
              }
            )
          }))
    }))
