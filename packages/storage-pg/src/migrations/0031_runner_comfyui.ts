/**
 * `comfyui`: what a probe of the runner's ComfyUI found (core's `RunnerComfyUI`: its version, its
 * devices, whether it has the jobs API), written at registration and when a later probe sees a
 * change; null until probed. Nullable without a default: only the catalog changes.
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE runners ADD COLUMN comfyui jsonb`
  yield* sql`ALTER TABLE managed_runners ADD COLUMN comfyui jsonb`
})
