import { defineConfig } from "tsup"
import { libraryConfig } from "../../tsup.shared.js"

/**
 * The `wes` command carries what it runs: its dependencies bundled and tree-shaken, the
 * PostgreSQL store and dev mode in chunks loaded only when used. An idle `wes serve` then holds
 * about 20 MB less (124 -> 105 MB RSS, docs/decisions.md): node keeps the source and compiled
 * code of every module it loads, and the unbundled packages bring much it never calls.
 */
export default defineConfig({
  ...libraryConfig(["src/bin.ts"]),
  dts: false,
  // Built after the library, into the same directory.
  clean: false,
  noExternal: [/.*/],
  // Optional native add-ons of pg and ws, loaded only when installed.
  external: ["pg-native", "bufferutil", "utf-8-validate"],
  // Bundled CommonJS packages (pg, ws, undici) call require() for node's own modules.
  banner: { js: "import { createRequire as __wesRequire } from 'node:module'; const require = __wesRequire(import.meta.url);" },
  esbuildOptions: (options) => {
    options.chunkNames = "cli/[name]-[hash]"
  }
})
