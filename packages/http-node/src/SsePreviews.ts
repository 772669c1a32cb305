/**
 * `preview` events of the SSE stream (`?previews=true`): the latest preview image of a running
 * workflow, as `event: preview` with `{node, content_type, image}` (the image base64-encoded, its
 * bytes as the runner sent them) and NO `id:` line, so a client's Last-Event-ID stays the last
 * logged event's and a preview is never replayed. Each client has a slot of one: a client whose
 * socket has not taken what it was given gets the preview when it drains, and a newer preview
 * replaces one still waiting, so a slow client holds at most one preview, never a queue.
 */
import type { WorkflowPreview } from "@wes/core"

/** One `preview` event, encoded once for every client of the workflow. */
export const encodePreview = (p: WorkflowPreview): Buffer =>
  Buffer.from(`event: preview\ndata: ${
    JSON.stringify({
      node: p.node,
      content_type: p.content_type,
      image: Buffer.from(p.image.buffer, p.image.byteOffset, p.image.byteLength).toString("base64")
    })
  }\n\n`)

/** Where a preview goes: a client's response body (what `SseOut` is). */
export interface PreviewOut {
  readonly write: (bytes: Buffer) => unknown
  /** A write was refused (the stream's buffer is full) and the stream has not drained since. */
  readonly writableNeedDrain: boolean
  readonly once: (event: "drain", f: () => void) => unknown
}

/** A client's slot: the preview waiting for its socket to drain, if any. */
export interface PreviewSlot {
  waiting: Buffer | undefined
  /** Previews replaced while waiting (a count, for tests and logs). */
  replaced: number
}

export const previewSlot = (): PreviewSlot => ({ waiting: undefined, replaced: 0 })

/** Writes `bytes` now, or keeps them as the slot's one waiting preview until the client drains. */
export const offerPreview = (out: PreviewOut, slot: PreviewSlot, bytes: Buffer, ended: () => boolean): void => {
  if (!out.writableNeedDrain) {
    out.write(bytes)
    return
  }
  if (slot.waiting !== undefined) {
    slot.replaced++
    slot.waiting = bytes
    return
  }
  slot.waiting = bytes
  out.once("drain", () => {
    const next = slot.waiting
    slot.waiting = undefined
    if (next !== undefined && !ended()) out.write(next)
  })
}
