import * as NodeContext from "@effect/platform-node/NodeContext"
import { runStoreConformance } from "@wes/core/testing"
import { MemoryStoreLive } from "@wes/storage-memory"
import * as Layer from "effect/Layer"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, it } from "vitest"
import { FsBlobStoreLive } from "../src/FsBlobStore.js"

// The memory store with its blobs on disk: the blob cases of the conformance suite hit the files.
const dir = mkdtempSync(join(tmpdir(), "wes-blobs-"))
const store = Layer.merge(MemoryStoreLive, FsBlobStoreLive(dir).pipe(Layer.provide(NodeContext.layer)))

runStoreConformance("filesystem blob store conformance", store, { describe, it, afterAll })
afterAll(() => rmSync(dir, { recursive: true, force: true }))
