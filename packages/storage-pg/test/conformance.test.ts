import { runStoreConformance } from "@wes/core/testing"
import { afterAll, describe, it } from "vitest"
import { freshStore } from "./harness.js"

runStoreConformance("PostgreSQL store conformance", freshStore(), { describe, it, afterAll })
