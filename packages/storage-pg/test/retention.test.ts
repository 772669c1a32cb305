/**
 * Retention across instances: two stores (two pools, two instance names) on one schema, as two
 * `wes serve` processes sharing a database, sweep the same due workflows at once in small
 * batches. Their claims are disjoint: every workflow is swept, and the workflows, blobs and bytes
 * the two report add up to what there was, none counted twice.
 */
import { describe, expect, it } from "@effect/vitest"
import {
  AccountRepository,
  BlobStore,
  defaultRetentionOptions,
  RetentionRepository,
  sweepOnce,
  TierPolicy,
  type WorkflowOutput,
  WorkflowRepository,
  WorkflowTransition as T
} from "@wes/core"
import { Fixtures as F } from "@wes/core/testing"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { freshSchema, storeOn } from "./harness.js"

const WORKFLOWS = 40

describe("retention on PostgreSQL", () => {
  it.live("two instances sweeping at once share the due workflows without counting any twice", () =>
    Effect.gen(function*() {
      const schema = yield* freshSchema
      const scope = yield* Scope.make()
      yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
      // Every prefix either instance deletes: each workflow's two, once, when the claims are disjoint.
      const deleted: Array<string> = []
      const counted = Layer.effect(BlobStore, Effect.map(BlobStore, (inner) => BlobStore.of({
        ...inner,
        deletePrefix: (prefix) => Effect.tap(inner.deletePrefix(prefix), () => Effect.sync(() => void deleted.push(prefix)))
      })))
      const [a, b] = yield* Effect.all(["a", "b"].map((name) =>
        Layer.buildWithScope(
          Layer.merge(counted.pipe(Layer.provideMerge(storeOn(schema, { applicationName: `wes-test-retention-${name}` }))), TierPolicy.Default),
          scope
        )
      ))
      const seed = Effect.gen(function*() {
        const owner = yield* (yield* AccountRepository).insertUser(F.user({ tier: "free" }))
        const repo = yield* WorkflowRepository
        const blobs = yield* BlobStore
        let bytes = 0
        for (let i = 0; i < WORKFLOWS; i++) {
          // Ended on 2026-01-01, far more than the free tier's 7 days ago.
          const w = F.workflow(owner.id, { created_at: F.at(i), updated_at: F.at(i) })
          yield* repo.create(w)
          const key = `outputs/${w.id}/o/out.png`
          const size = yield* blobs.put(key, [new Uint8Array(100 + i)], "image/png")
          yield* blobs.put(`inputs/${w.id}/img/in.png`, [new Uint8Array(10)], "image/png")
          bytes += size + 10
          const output: WorkflowOutput = {
            id: F.uuid() as never, workflow_id: w.id, node_id: "3", filename: "out.png", subfolder: "", type: "output",
            content_type: "image/png", size, blob_key: key, created_at: F.at(i), expired_at: null
          }
          yield* repo.transition({ id: w.id, steps: [T.Cancelled()], at: F.at(i), outputs: [output] })
        }
        return bytes
      })
      const bytes = yield* seed.pipe(Effect.provide(a))
      const sweep = (owner: string) => sweepOnce({ ...defaultRetentionOptions(owner, "pg"), batch: 3 })
      const [ra, rb] = yield* Effect.all([sweep("a").pipe(Effect.provide(a)), sweep("b").pipe(Effect.provide(b))], { concurrency: 2 })
      expect(ra.workflows + rb.workflows).toBe(WORKFLOWS)
      expect(ra.blobs + rb.blobs).toBe(2 * WORKFLOWS)
      expect(ra.bytes + rb.bytes).toBe(bytes)
      expect(deleted).toHaveLength(2 * WORKFLOWS)
      expect(new Set(deleted).size).toBe(2 * WORKFLOWS)
      expect(yield* Effect.flatMap(RetentionRepository, (r) => r.storedBytes).pipe(Effect.provide(b))).toBe(0)
      const again = yield* sweep("b").pipe(Effect.provide(b))
      expect([again.workflows, again.blobs]).toEqual([0, 0])
    }), { timeout: 60_000 })
})
