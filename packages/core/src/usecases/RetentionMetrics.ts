/**
 * The retention sweeper's metrics (rendered at `GET /metrics` with the others). Labelled by the
 * blob store's kind only (memory, pg, fs, s3): bounded.
 */
import * as Metric from "effect/Metric"

export const blobStoredBytes = Metric.gauge("wes_blob_stored_bytes", {
  description: "Bytes of output files the store keeps (not yet expired), by blob store; read from the store at each sweep"
})
export const retentionDeletedBytes = Metric.counter("wes_retention_deleted_bytes_total", {
  description: "Bytes of blobs the retention sweeper deleted, by blob store",
  incremental: true
})
export const retentionDeletedBlobs = Metric.counter("wes_retention_deleted_blobs_total", {
  description: "Blobs (inputs and outputs) the retention sweeper deleted, by blob store",
  incremental: true
})
export const retentionExpiredWorkflows = Metric.counter("wes_retention_expired_workflows_total", {
  description: "Finished workflows whose files the retention sweeper deleted (their outputs marked expired)",
  incremental: true
})
export const prunedEvents = Metric.counter("wes_retention_pruned_events_total", {
  description: "Events of finished workflows pruned by the retention sweeper",
  incremental: true
})
export const prunedDeliveries = Metric.counter("wes_retention_pruned_deliveries_total", {
  description: "Webhook deliveries pruned by the retention sweeper",
  incremental: true
})
