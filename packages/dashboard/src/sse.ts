/**
 * Follows a workflow's event stream (`GET /v1/workflow/{id}/subscribe`). EventSource cannot send
 * the bearer header, so the stream is read with fetch. When the stream ends before `done` (server
 * restart, a slow client dropped), it reconnects with `Last-Event-ID` after a growing delay
 * (1 s doubling to 30 s, reset by any event): nothing is lost, and nothing is polled.
 */
import { ApiError, request } from "./api.js"

export interface StreamEvent {
  readonly id: number
  readonly type: string
  readonly data: unknown
}

export interface FollowOptions {
  /** Replay the log after this event id (0: the whole life of an unfinished workflow). */
  readonly after?: number
  readonly onEvent: (e: StreamEvent) => void
  /** A refusal (401, 404, ...): the stream is not retried. */
  readonly onError?: (e: ApiError) => void
}

/** Splits a chunk of text/event-stream into events; the unfinished tail is returned. */
export const parseEvents = (text: string): { readonly events: ReadonlyArray<StreamEvent>; readonly rest: string } => {
  const blocks = text.split("\n\n")
  const rest = blocks.pop() ?? ""
  const events: Array<StreamEvent> = []
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
  }
  return { events, rest }
}

/** Starts following; the returned function stops (and closes the connection). */
export const follow = (workflowId: string, options: FollowOptions): (() => void) => {
  const controller = new AbortController()
  let last = options.after
  let delay = 1000
  let done = false
  const connect = async (): Promise<void> => {
    const headers: Record<string, string> = last === undefined ? {} : { "last-event-id": String(last) }
    const res = await request(`/v1/workflow/${workflowId}/subscribe`, { headers, signal: controller.signal })
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
    let buffer = ""
    for (;;) {
      const { done: ended, value } = await reader.read()
      if (ended) return
      const { events, rest } = parseEvents(buffer + value)
      buffer = rest
      for (const e of events) {
        last = e.id
        delay = 1000
        options.onEvent(e)
        if (e.type === "done") done = true
      }
      if (done) return void controller.abort()
    }
  }
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
