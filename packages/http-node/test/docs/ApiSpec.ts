/** The OpenAPI document the server serves (HttpApiBuilder serves `OpenApi.fromApi`), as JSON. */
import * as OpenApi from "effect/http-api/OpenApi"
import { WesApi } from "@wes/api"
import type { Obj } from "./Schemas.js"

export const openApiDocument = (): Obj => JSON.parse(JSON.stringify(OpenApi.fromApi(WesApi))) as Obj
