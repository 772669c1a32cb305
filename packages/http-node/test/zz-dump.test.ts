import { it } from "vitest"
import * as fs from "node:fs"
import { startServer } from "./harness.js"
it("dump", async () => { const s = await startServer(); fs.writeFileSync("/tmp/served-openapi.json", await (await s.fetch("/v1/openapi.json")).text()); await s.close() })
