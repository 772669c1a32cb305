import { defineConfig } from "tsup"
import { libraryConfig } from "../../tsup.shared.js"

export default defineConfig(libraryConfig(["src/index.ts", "src/testing.ts", "src/AgentProtocol.ts"]))
