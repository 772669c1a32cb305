/**
 * What the service needs from the agents of runners reached through `wes-agent` (issue 34): the
 * health an agent reports, model files placed before a prompt is posted, and a run's files
 * deleted from ComfyUI's folders once WES holds its outputs. Optional: without it (an embedder
 * with direct runners only) agent runners are never driven. `@wes/http-node` implements it over
 * the agents' connections (AgentHub); the connection to ComfyUI itself is `RunnerGateway`'s.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { ModelFile } from "../domain/ModelFiles.js"
import type { OutputFile, RunnerUnreachable, UploadedInput } from "./RunnerGateway.js"

export { MAX_MODEL_FILES, MODEL_FOLDERS, ModelFile, ModelFiles, ModelFolder } from "../domain/ModelFiles.js"

/** A model file the agent placed (and may evict), or found in place. */
export const PlacedModel = Schema.Struct({
  folder: Schema.String,
  filename: Schema.String,
  sha256: Schema.String,
  bytes: Schema.Number
})
export interface PlacedModel extends Schema.Schema.Type<typeof PlacedModel> {}

/** What an agent reports of its machine (issue 34, item 5), as it sends it. */
export const AgentStatus = Schema.Struct({
  agent_version: Schema.String,
  gpu: Schema.NullOr(Schema.Struct({
    name: Schema.String,
    vram_total_bytes: Schema.NullOr(Schema.Number),
    vram_free_bytes: Schema.NullOr(Schema.Number)
  })),
  disk: Schema.NullOr(Schema.Struct({ free_bytes: Schema.Number, total_bytes: Schema.Number })),
  /** Files the agent placed (WES-managed, evictable), with their sizes: the runner's model inventory. */
  models: Schema.Array(PlacedModel),
  /** The agent's disk budget for placed models, in bytes (null: unbounded). */
  model_budget_bytes: Schema.NullOr(Schema.Number),
  /** Whether it deletes a run's files from ComfyUI's folders (disk hygiene). */
  cleanup: Schema.Boolean
}).annotate({ identifier: "AgentStatus" })
export interface AgentStatus extends Schema.Schema.Type<typeof AgentStatus> {}

/** Progress of one file's provisioning. */
export interface ProvisionProgress {
  readonly filename: string
  readonly folder: string
  readonly bytes: number
  readonly total: number | null
}

/** A model file could not be placed: download failed, sha256 mismatch, or over the disk budget. */
export class ProvisionFailed extends Schema.TaggedError<ProvisionFailed>()("ProvisionFailed", {
  runner_id: Schema.String,
  filename: Schema.String,
  message: Schema.String
}) {}

/** A run's files on ComfyUI's disk: its outputs (output and temp folders) and its uploaded inputs. */
export interface RunFiles {
  readonly prompt_id: string
  readonly outputs: ReadonlyArray<OutputFile>
  readonly inputs: ReadonlyArray<UploadedInput>
}

export class RunnerAgents extends Context.Service<RunnerAgents, {
  /** Whether `runnerId`'s agent holds a connection to this instance now. */
  readonly connected: (runnerId: string) => boolean
  /** The latest status its agent reported (from any instance); none when it never connected. */
  readonly status: (runnerId: string) => Effect.Effect<Option.Option<AgentStatus & { readonly connected: boolean; readonly reported_at: string }>>
  /**
   * Makes sure each file is in place on the runner (downloads what is missing, verifies sha256),
   * reporting progress; fails naming the file that could not be placed.
   */
  readonly provision: (
    runnerId: string,
    models: ReadonlyArray<ModelFile>,
    onProgress: (p: ProvisionProgress) => Effect.Effect<void>
  ) => Effect.Effect<void, RunnerUnreachable | ProvisionFailed>
  /** Deletes a finished run's files from ComfyUI's folders (a no-op when the agent's cleanup is off). */
  readonly cleanup: (runnerId: string, files: RunFiles) => Effect.Effect<void, RunnerUnreachable>
}>()("@wes/core/RunnerAgents") {}
