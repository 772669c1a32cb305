/**
 * The retention sweeper of `wes serve` (core's `runRetention`), run for the life of the layer
 * unless `WES_RETENTION_INTERVAL=off`. Each instance claims under its own name, so several on one
 * database share the due workflows (see core's Retention.ts).
 */
import { defaultRetentionOptions, type RetentionRepository, runRetention, type BlobStore, type TierPolicy } from "@wes/core"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { randomUUID } from "node:crypto"
import { hostname } from "node:os"
import type { WesConfig } from "./Config.js"

/** The blob store's kind, the `store` label of the retention metrics. */
export const blobStoreKind = (config: Pick<WesConfig, "blobStore" | "blobDir" | "storage">): string =>
  Option.isSome(config.blobStore) ? "s3" : Option.isSome(config.blobDir) ? "fs" : config.storage === "postgres" ? "pg" : "memory"

export interface RetentionLayerOptions {
  /** Time between sweeps; none: no sweeper. */
  readonly interval: Option.Option<Duration.Duration>
  readonly store: string
  readonly eventsAfter: Duration.Duration
  readonly deliveriesAfter: Duration.Duration
}

export const retentionLayer = (options: RetentionLayerOptions): Layer.Layer<never, never, RetentionRepository | BlobStore | TierPolicy> =>
  Option.match(options.interval, {
    onNone: () => Layer.empty,
    onSome: (interval) =>
      Layer.effectDiscard(Effect.forkScoped(runRetention({
        ...defaultRetentionOptions(`${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`, options.store),
        interval,
        eventsAfter: options.eventsAfter,
        deliveriesAfter: options.deliveriesAfter
      })))
  })
