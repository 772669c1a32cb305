/** A runner's capabilities as the API shows them (the contract's `capabilities` field of a runner). */
import * as Schema from "effect/Schema"
import { Int, Timestamp } from "./Json.js"
import { modelFileCount, type StoredCapabilities } from "./Summary.js"

/** What `GET /v1/runner/{id}` shows: counts and the hash, not the summary. */
export const CapabilitiesView = Schema.Struct({
  node_classes: Int,
  model_files: Int,
  hash: Schema.String,
  read_at: Timestamp
}).annotate({
  identifier: "RunnerCapabilities",
  description: "What the runner's /object_info offered when last read: node classes, model files, " +
    "a hash of the summary; null until read (unknown capabilities: the runner stays eligible)"
})
export interface CapabilitiesView extends Schema.Schema.Type<typeof CapabilitiesView> {}

export const toCapabilitiesView = (r: StoredCapabilities): CapabilitiesView => ({
  node_classes: r.summary.node_classes.length,
  model_files: modelFileCount(r.summary),
  hash: r.hash,
  read_at: r.read_at
})

