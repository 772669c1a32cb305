/**
 * A runner connection's events on their way to the consumer (the bounded queue it takes from),
 * and the bytes of the image frames among them: those received and not yet offered (the socket's
 * inbox, the batch being decoded), and those offered whose event the consumer has not taken yet.
 * The consumer takes events in order, so the ones taken are the first `offered - size` ever
 * offered; each image's bytes are released then. A frame that would take the total past the
 * budget drops the socket: with a stalled consumer, images (which may be a node's full-size
 * results) never pile up beyond it.
 */
import type { RunnerEvent } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"

export class Outbox {
  /** Image bytes received and not yet offered. */
  private received = 0
  /** Events ever offered. */
  private offered = 0
  /** Offered images not known to be taken yet: their position among the offered events and their bytes. */
  private readonly queued: Array<{ readonly index: number; readonly bytes: number }> = []
  private queuedBytes = 0

  constructor(private readonly out: Queue.Queue<RunnerEvent>, readonly imageBytes: number) {}

  /** Image bytes held now. */
  held(): number {
    // While an offer waits for room the events it put in count in the size but not yet in
    // `offered`, so fewer count as taken (never more).
    const size = Queue.sizeUnsafe(this.out)
    const taken = this.offered - size
    while (this.queued.length > 0 && this.queued[0]!.index < taken) this.queuedBytes -= this.queued.shift()!.bytes
    return this.received + this.queuedBytes
  }

  /** Counts a binary frame of `bytes` received; false (nothing counted) when it would exceed the budget. */
  receive(bytes: number): boolean {
    if (this.held() + bytes > this.imageBytes) return false
    this.received += bytes
    return true
  }

  /** Offers `events`, decoded from binary frames of `bytes` in all (waiting while the queue is full). */
  offerAll(events: ReadonlyArray<RunnerEvent>, bytes = 0): Effect.Effect<void> {
    if (events.length === 0) {
      this.received -= bytes
      return Effect.void
    }
    return Effect.map(Queue.offerAll(this.out, events), () => {
      this.received -= bytes
      for (const e of events) {
        if (e._tag === "ImageFrame") {
          this.queued.push({ index: this.offered, bytes: e.image.length })
          this.queuedBytes += e.image.length
        }
        this.offered++
      }
    })
  }
}
