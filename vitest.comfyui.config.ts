import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"
import { shared } from "./vitest.shared.js"

const root = path.dirname(fileURLToPath(import.meta.url))

/**
 * `pnpm test:comfyui`: the suites that run against an unmodified ComfyUI (`*.comfyui.test.ts`).
 * The global setup installs ComfyUI on first use; each file starts and stops its own ComfyUI
 * processes. Files run one at a time in one fork: ComfyUI on the CPU wants both cores.
 */
export default defineConfig({
  resolve: shared.resolve ?? {},
  test: {
    name: "comfyui",
    include: ["packages/*/test/**/*.comfyui.test.ts"],
    globalSetup: [path.join(root, "packages/runner-client/test/comfyui/globalSetup.ts")],
    setupFiles: [path.join(root, "vitest.setup.ts")],
    testTimeout: 180_000,
    hookTimeout: 300_000,
    pool: "forks",
    poolOptions: { forks: { singleFork: true } },
    fileParallelism: false,
    sequence: { concurrent: false }
  }
})
