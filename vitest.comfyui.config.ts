import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"
import { shared } from "./vitest.shared.js"

const root = path.dirname(fileURLToPath(import.meta.url))

/**
 * The ComfyUI versions every real-ComfyUI scenario runs on: the ends of the range WES supports
 * (docs/operating-runners.md#comfyui-versions), each a `COMFYUI_VERSION` of `../shared/comfyui/setup.sh`.
 */
const VERSIONS = ["0.3.64", "0.3.45"] as const

/**
 * `pnpm test:comfyui`: the suites that run against an unmodified ComfyUI (`*.comfyui.test.ts`),
 * once per version, as the projects `comfyui-0.3.64` then `comfyui-0.3.45` (one alone:
 * `pnpm test:comfyui --project comfyui-0.3.45`). Each project's global setup installs its ComfyUI
 * on first use; each file starts and stops its own ComfyUI processes. Files run one at a time in
 * one fork, and the projects one after the other: ComfyUI on the CPU wants both cores.
 */
export default defineConfig({
  resolve: shared.resolve ?? {},
  test: {
    include: ["packages/*/test/**/*.comfyui.test.ts"],
    setupFiles: [path.join(root, "vitest.setup.ts")],
    testTimeout: 180_000,
    hookTimeout: 300_000,
    pool: "forks",
    // One fork for every file, one file at a time (vitest 4+ spells `singleFork` this way).
    maxWorkers: 1,
    isolate: false,
    fileParallelism: false,
    sequence: { concurrent: false },
    projects: VERSIONS.map((version, order) => ({
      extends: true,
      test: {
        name: `comfyui-${version}`,
        provide: { comfyuiVersion: version },
        // Per project, not at the root: the root's global setup runs too, without a version.
        globalSetup: [path.join(root, "packages/runner-client/test/comfyui/globalSetup.ts")],
        sequence: { groupOrder: order }
      }
    }))
  }
})
