import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"
import { shared } from "./vitest.shared.js"

/**
 * The serial phase of `pnpm test`: suites that restart the shared PostgreSQL server or measure a
 * process over minutes (`*.serial.test.ts`). They run after the parallel projects, one file at a
 * time in one fork, so that nothing else is using the database when it goes away.
 */
export default defineConfig({
  resolve: shared.resolve ?? {},
  test: {
    name: "serial",
    include: ["packages/*/test/**/*.serial.test.ts"],
    setupFiles: [path.join(path.dirname(fileURLToPath(import.meta.url)), "vitest.setup.ts")],
    testTimeout: 300_000,
    hookTimeout: 60_000,
    pool: "forks",
    // One fork for every file, one file at a time (vitest 4+ spells `singleFork` this way).
    maxWorkers: 1,
    isolate: false,
    fileParallelism: false,
    sequence: { concurrent: false }
  }
})
