import * as OpenApi from "effect/http-api/OpenApi"
import { WesApi } from "../src/index.js"
import { writeFileSync } from "node:fs"
const spec = OpenApi.fromApi(WesApi)
writeFileSync(process.argv[2] ?? "/tmp/openapi-v4.json", `${JSON.stringify(spec, null, 2)}\n`)
console.log("ok")
