/**
 * The retention sweeper over the memory store, on the TestClock: files expire after their owner's
 * tier's `retention_days` (not before), in batches until none is due; an expired output answers
 * 410 with its date; events and deliveries are pruned after their periods, and a pruned
 * workflow's event stream still ends with its terminal status.
 */
import { it } from "@effect/vitest"
import {
  BlobStore,
  defaultRetentionOptions,
  PlatformLive,
  type RetentionOptions,
  retentionDeletedBytes,
  retentionExpiredWorkflows,
  RunnerGateway,
  RunnerProbe,
  sweepOnce,
  TierPolicy,
  type User,
  WebhookRepository,
  WorkflowEventBus,
  type WorkflowOutput,
  WorkflowRepository,
  WorkflowService,
  WorkflowTransition as T,
  useCasesLayer
} from "@wes/core"
import { MemoryStoreLive } from "@wes/storage-memory"
import { Fixtures as F } from "@wes/core/testing"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { TestClock } from "effect/testing"
import { describe, expect } from "vitest"
import { makeTestGateway, newUser } from "./harness.js"

const options: RetentionOptions = { ...defaultRetentionOptions("test", "memory"), batch: 2 }
const sweep = sweepOnce(options)
const DAY = Duration.days(1)

/** A workflow of `user` that ends now (cancelled) with one output and one input file in the blob store. */
const endedWithFiles = (user: User, bytes = "PNGDATA") =>
  Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const blobs = yield* BlobStore
    const now = yield* DateTime.now
    const w = F.workflow(user.id, { created_at: now, updated_at: now })
    yield* repo.create(w)
    const key = `outputs/${w.id}/o1/out.png`
    yield* blobs.put(key, [new TextEncoder().encode(bytes)], "image/png")
    yield* blobs.put(`inputs/${w.id}/img/in.png`, [new TextEncoder().encode("IN")], "image/png")
    const output: WorkflowOutput = {
      id: F.uuid() as never, workflow_id: w.id, node_id: "3", filename: "out.png", subfolder: "", type: "output",
      content_type: "image/png", size: bytes.length, blob_key: key, created_at: now, expired_at: null
    }
    yield* repo.transition({ id: w.id, steps: [T.Cancelled()], at: now, outputs: [output] })
    return { workflow: w, output }
  })

const download = (user: User, f: { readonly workflow: { readonly id: string }; readonly output: { readonly id: string } }) =>
  Effect.flatMap(WorkflowService, (s) => s.openOutput(user, f.workflow.id, f.output.id))

/**
 * The use cases over a fresh memory store, their own background ticks (token use, capabilities)
 * once a day: the TestClock moves weeks at a time, and a 10 s tick would run 60,000 times a week.
 */
const layer = useCasesLayer({
  tokenUse: { minInterval: DAY, flushInterval: DAY },
  capabilities: { refreshInterval: DAY }
}).pipe(Layer.provideMerge(Layer.mergeAll(
  MemoryStoreLive,
  Layer.succeed(RunnerGateway, makeTestGateway({ probes: [], cancels: [] })),
  RunnerProbe.Off,
  TierPolicy.Default,
  PlatformLive
)))

describe("retention sweeper", () => {

  it.effect("deletes a free user's files after 7 days, not before, and a pro user's after 30; the output then answers 410 with its date", () =>
    Effect.gen(function*() {
      const free = yield* newUser("free")
      const pro = yield* newUser("pro")
      const a = yield* endedWithFiles(free)
      const b = yield* endedWithFiles(pro, "PRO")
      yield* TestClock.adjust(Duration.subtract(Duration.days(7), Duration.seconds(1)))
      expect((yield* sweep).workflows).toBe(0)
      expect((yield* download(free, a)).blob.size).toBe(7)
      yield* TestClock.adjust(Duration.seconds(1))
      const swept = yield* sweep
      expect(swept).toMatchObject({ workflows: 1, blobs: 2, bytes: 7 + 2 })
      const gone = yield* Effect.flip(download(free, a))
      expect(gone).toMatchObject({
        _tag: "OutputExpired",
        expired_at: "1970-01-08T00:00:00.000Z",
        message: "Output expired on 1970-01-08T00:00:00.000Z (retention: 7 days); its file was deleted"
      })
      expect(yield* (yield* BlobStore).get(a.output.blob_key)).toEqual(Option.none())
      const listed = yield* (yield* WorkflowService).outputs(free, a.workflow.id)
      expect(listed.map((o) => o.expired_at === null ? null : DateTime.formatIso(o.expired_at))).toEqual(["1970-01-08T00:00:00.000Z"])
      expect((yield* download(pro, b)).blob.size).toBe(3)
      yield* TestClock.adjust(Duration.days(23))
      expect((yield* sweep).workflows).toBe(1)
      expect((yield* Effect.flip(download(pro, b))).message).toContain("(retention: 30 days)")
      expect((yield* sweep).workflows).toBe(0)
    }).pipe(Effect.provide(layer)))

  it.effect("sweeps every due workflow in one sweep, batch after batch", () =>
    Effect.gen(function*() {
      const user = yield* newUser("free")
      const before = (yield* Metric.value(retentionExpiredWorkflows)).count
      const bytesBefore = (yield* Metric.value(Metric.withAttributes(retentionDeletedBytes, { store: "memory" }))).count
      const all = yield* Effect.forEach([1, 2, 3, 4, 5], () => endedWithFiles(user))
      yield* TestClock.adjust(Duration.times(DAY, 7))
      expect(yield* sweep).toMatchObject({ workflows: 5, blobs: 10 })
      for (const f of all) expect((yield* Effect.flip(download(user, f)))._tag).toBe("OutputExpired")
      expect((yield* Metric.value(retentionExpiredWorkflows)).count - before).toBe(5)
      expect((yield* Metric.value(Metric.withAttributes(retentionDeletedBytes, { store: "memory" }))).count - bytesBefore).toBe(5 * 9)
    }).pipe(Effect.provide(layer)))

  it.effect("prunes a finished workflow's events after 7 days; its event stream still ends with its terminal status", () =>
    Effect.gen(function*() {
      const user = yield* newUser("plus")
      const { workflow } = yield* endedWithFiles(user)
      const bus = yield* WorkflowEventBus
      const logged = yield* bus.lastSeq(workflow.id)
      yield* TestClock.adjust(Duration.subtract(Duration.days(7), Duration.seconds(1)))
      expect((yield* sweep).events).toBe(0)
      yield* TestClock.adjust(Duration.seconds(1))
      expect((yield* sweep).events).toBe(logged)
      expect(yield* bus.read(workflow.id, 0, 100)).toEqual([])
      const service = yield* WorkflowService
      for (const lastEventId of [undefined, 0, 1]) {
        const events = yield* Stream.runCollect(yield* service.follow(user, workflow.id, lastEventId))
        expect(events.map((e) => [e.type, (e.data as { status: string }).status])).toEqual([["status", "cancelled"], ["done", "cancelled"]])
      }
    }).pipe(Effect.provide(layer)))

  it.effect("prunes a webhook delivery 30 days after its outcome", () =>
    Effect.gen(function*() {
      const user = yield* newUser("free")
      const hooks = yield* WebhookRepository
      const now = yield* DateTime.now
      yield* hooks.putEndpoint({ user_id: user.id, url: "https://hooks.example/", secret: "whsec_x", previous_secret: null, previous_expires_at: null, created_at: now, updated_at: now })
      const { workflow } = yield* endedWithFiles(user)
      const [delivery] = yield* hooks.claim("t", now, DateTime.addDuration(now, Duration.minutes(1)), 10)
      yield* hooks.complete(delivery!.id, "t", { at: now, status_code: 200, error: null, duration_ms: 1, next_attempt_at: null }, { _tag: "Delivered" })
      yield* TestClock.adjust(Duration.subtract(Duration.days(30), Duration.seconds(1)))
      expect((yield* sweep).deliveries).toBe(0)
      yield* TestClock.adjust(Duration.seconds(1))
      expect((yield* sweep).deliveries).toBe(1)
      expect(yield* hooks.listForWorkflow(workflow.id)).toEqual([])
    }).pipe(Effect.provide(layer)))
})
