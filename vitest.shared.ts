import * as path from "node:path"
import { fileURLToPath } from "node:url"
import type { ViteUserConfig } from "vitest/config"

const root = path.dirname(fileURLToPath(import.meta.url))
const src = (pkg: string, file = "index.ts") => path.join(root, "packages", pkg, "src", file)

/** Tests run against the sources of the workspace packages, never against a stale build. */
export const shared: ViteUserConfig = {
  resolve: {
    alias: [
      { find: /^@wes\/core\/testing$/, replacement: src("core", "testing.ts") },
      { find: /^@wes\/core$/, replacement: src("core") },
      { find: /^@wes\/api$/, replacement: src("api") },
      { find: /^@wes\/storage-memory$/, replacement: src("storage-memory") },
      { find: /^@wes\/storage-pg$/, replacement: src("storage-pg") },
      { find: /^@wes\/storage-s3\/testing$/, replacement: src("storage-s3", "testing.ts") },
      { find: /^@wes\/storage-s3$/, replacement: src("storage-s3") },
      { find: /^@wes\/runner-client\/testing$/, replacement: src("runner-client", "testing.ts") },
      { find: /^@wes\/runner-client$/, replacement: src("runner-client") },
      { find: /^@wes\/runner-client\/agent-protocol$/, replacement: src("runner-client", "AgentProtocol.ts") },
      { find: /^@wes\/runner-agent$/, replacement: src("runner-agent") },
      { find: /^@wes\/http-node$/, replacement: src("http-node") }
    ]
  },
  test: {
    include: ["test/**/*.test.ts"],
    // Serial suites restart the shared PostgreSQL server: they run alone (vitest.serial.config.ts).
    // Real-ComfyUI suites run in `pnpm test:comfyui` (vitest.comfyui.config.ts).
    exclude: ["**/node_modules/**", "**/dist/**", "test/**/*.serial.test.ts", "test/**/*.comfyui.test.ts"],
    setupFiles: [path.join(root, "vitest.setup.ts")],
    testTimeout: 30_000,
    hookTimeout: 30_000
  }
}
