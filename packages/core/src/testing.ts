/**
 * @wes/core/testing: the conformance suite every store adapter runs, and the fixtures it uses.
 * It depends on no test framework: pass yours in.
 *
 *   import { describe, it, afterAll } from "vitest"
 *   runStoreConformance("memory store", MemoryStoreLive, { describe, it, afterAll })
 */
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import type { StoreServices } from "./UseCases.js"
import { storeConformanceCases } from "./testing/StoreConformance.js"
import { type BlobConformanceOptions, blobConformanceCases } from "./testing/BlobConformance.js"
import type { BlobStore } from "./ports/BlobStore.js"

export * from "./testing/Assert.js"
export * as Fixtures from "./testing/Fixtures.js"
export { type ConformanceCase, storeConformanceCases } from "./testing/StoreConformance.js"
export { type BlobCase, type BlobConformanceOptions, blobConformanceCases } from "./testing/BlobConformance.js"

// Internals that other packages' tests drive directly (not part of the public surface in index.ts)
export * as Lifecycle from "./usecases/Lifecycle.js"
export { indexSummary, missingOn, workflowNeeds } from "./domain/Needs.js"
export { summarize } from "./domain/Summary.js"
export { inputReference } from "./ports/RunnerGateway.js"
export { type SeenRun, seeRun, seenHistory, startRun } from "./dispatch/SeenRun.js"

/** The parts of a test framework the suite uses (vitest, jest and node:test all fit). */
export interface TestFramework {
  readonly describe: (name: string, body: () => void) => void
  readonly it: (name: string, body: () => Promise<void>, timeout?: number) => void
  readonly afterAll: (body: () => Promise<void>) => void
}

/**
 * Registers the store conformance suite. `store` must build a fresh, empty store; it is built
 * once for the suite (cases use distinct users) and released after it.
 */
export const runStoreConformance = (
  name: string,
  store: Layer.Layer<StoreServices, unknown>,
  t: TestFramework,
  options: { readonly timeout?: number } = {}
): void => {
  t.describe(name, () => {
    const runtime = ManagedRuntime.make(store)
    t.afterAll(() => runtime.dispose())
    for (const testCase of storeConformanceCases) {
      t.it(testCase.name, () => runtime.runPromise(Effect.scoped(testCase.run)), options.timeout ?? 30_000)
    }
  })
}

/**
 * Registers the blob store conformance suite alone, for a store of blobs only (S3); the store
 * conformance suite runs the same cases for a whole store. `store` is built once for the suite.
 */
export const runBlobConformance = (
  name: string,
  store: Layer.Layer<BlobStore, unknown>,
  t: TestFramework,
  options: BlobConformanceOptions & { readonly timeout?: number } = {}
): void => {
  t.describe(name, () => {
    const runtime = ManagedRuntime.make(store)
    t.afterAll(() => runtime.dispose())
    for (const testCase of blobConformanceCases(options)) {
      t.it(testCase.name, () => runtime.runPromise(testCase.run), options.timeout ?? 60_000)
    }
  })
}
