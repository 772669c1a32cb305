/**
 * Follows a workflow's event stream (`GET /v1/workflow/{id}/subscribe`). EventSource cannot send
 * the bearer header, so the stream is the typed client's answer, read as it arrives (its
 * `responseMode: "response-only"`: a decoded body would wait for the end of the stream). When the
 * stream ends before `done` (server restart, a slow client dropped), it reconnects with
 * `Last-Event-ID` after a growing delay (1 s doubling to 30 s, reset by any event): nothing is
 * lost, and nothing is polled. With `onPreview`, it asks for live previews (`?previews=true`): the
 * `preview` events, which carry no id, are handed over as they come and never move Last-Event-ID.
 */
import { WesApi } from "@wes/api"
import * as Effect from "effect/Effect"
import * as HttpApiClient from "effect/http-api/HttpApiClient"
import * as Stream from "effect/Stream"
import { ApiError, call } from "./api.js"

/** A refused subscription (any answer but 200) as its declared error. */
const refusal = HttpApiClient.decodeResponse(WesApi, { group: "workflows", endpoint: "subscribe" })

export interface StreamEvent {
  readonly id: number
  readonly type: string
  readonly data: unknown
}

/** A `preview` event's data: the running node's latest preview image (base64). */
export interface PreviewImage {
  readonly node: string | null
  readonly content_type: string
  readonly image: string
}

export interface FollowOptions {
  /** Replay the log after this event id (0: the whole life of an unfinished workflow). */
  readonly after?: number
  readonly onEvent: (e: StreamEvent) => void
  /** Live previews of the running node (asked for only when given). */
  readonly onPreview?: (p: PreviewImage) => void
  /** A refusal (401, 404, ...): the stream is not retried. */
  readonly onError?: (e: ApiError) => void
}

/** Splits a chunk of text/event-stream into events and previews; the unfinished tail is returned. */
export const parseEvents = (
  text: string
): { readonly events: ReadonlyArray<StreamEvent>; readonly previews: ReadonlyArray<PreviewImage>; readonly rest: string } => {
  const blocks = text.split("\n\n")
  const rest = blocks.pop() ?? ""
  const events: Array<StreamEvent> = []
  const previews: Array<PreviewImage> = []
  for (const block of blocks) {
    let id = NaN
    let type = "message"
    const data: Array<string> = []
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) continue
      const colon = line.indexOf(":")
      const field = colon === -1 ? line : line.slice(0, colon)
      const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "")
      if (field === "id") id = Number(value)
      else if (field === "event") type = value
      else if (field === "data") data.push(value)
    }
    if (data.length > 0 && Number.isInteger(id)) events.push({ id, type, data: JSON.parse(data.join("\n")) })
    else if (data.length > 0 && type === "preview") previews.push(JSON.parse(data.join("\n")) as PreviewImage)
  }
  return { events, previews, rest }
}

/** What the stream brings: an event of the log, or a live preview. */
type Item = { readonly event: StreamEvent } | { readonly preview: PreviewImage }

/** Starts following; the returned function stops (and closes the connection). */
export const follow = (workflowId: string, options: FollowOptions): (() => void) => {
  const controller = new AbortController()
  let last = options.after
  let delay = 1000
  let done = false
  const connect = (): Promise<void> =>
    call((api) =>
      Effect.gen(function*() {
        const response = yield* api.workflows.subscribe({
          params: { id: workflowId },
          query: options.onPreview === undefined ? {} : { previews: true },
          headers: last === undefined ? {} : { "last-event-id": last },
          responseMode: "response-only"
        })
        if (response.status !== 200) return yield* Effect.asVoid(refusal(response))
        yield* response.stream.pipe(
          Stream.decodeText(),
          // The unfinished tail of the text waits for the next chunk.
          Stream.mapAccum(() => "", (buffer, text: string) => {
            const { events, previews, rest } = parseEvents(buffer + text)
            // Only the latest preview of a chunk is worth showing.
            const latest: Array<Item> = previews.length > 0 ? [{ preview: previews[previews.length - 1]! }] : []
            return [rest, [...latest, ...events.map((event): Item => ({ event }))]] as const
          }),
          Stream.takeUntil((item) => "event" in item && item.event.type === "done"),
          Stream.runForEach((item) =>
            Effect.sync(() => {
              if ("preview" in item) return options.onPreview?.(item.preview)
              const e = item.event
              last = e.id
              delay = 1000
              options.onEvent(e)
              if (e.type === "done") done = true
            })
          )
        )
      }), { signal: controller.signal }).then(() => {
      if (done) controller.abort()
    })
  const loop = async (): Promise<void> => {
    while (!done && !controller.signal.aborted) {
      try {
        await connect()
      } catch (e) {
        if (controller.signal.aborted) return
        if (e instanceof ApiError && e.status >= 400 && e.status < 500 && e.status !== 429) {
          options.onError?.(e)
          return
        }
      }
      if (done || controller.signal.aborted) return
      await new Promise((resolve) => setTimeout(resolve, delay))
      delay = Math.min(delay * 2, 30_000)
    }
  }
  void loop()
  return () => controller.abort()
}
