import { defineConfig } from "tsup"
import { libraryConfig } from "../../tsup.shared.js"

// The library; `tsup.bin.config.ts` builds the `wes` command after it.
export default defineConfig({ ...libraryConfig(["src/index.ts"]) })
