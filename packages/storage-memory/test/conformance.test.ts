import { runStoreConformance } from "@wes/core/testing"
import { MemoryStoreLive } from "@wes/storage-memory"
import { afterAll, describe, it } from "vitest"

runStoreConformance("memory store conformance", MemoryStoreLive, { describe, it, afterAll })
