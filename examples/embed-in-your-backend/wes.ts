/**
 * WES composed from its packages, without @wes/http-node: the use cases and the dispatcher of
 * @wes/core over a store (@wes/storage-memory, or @wes/storage-pg when DATABASE_URL is set) and
 * the ComfyUI client of @wes/runner-client. This is what `wes serve` composes too, minus HTTP.
 */
import {
  type DispatcherOptions,
  PlatformLive,
  RunnerProbe,
  type StoreServices,
  TierPolicy,
  useCasesLayer
} from "@wes/core"
import { RunnerGatewayNode } from "@wes/runner-client"
import { MemoryStoreLive } from "@wes/storage-memory"
import { PgStoreLive } from "@wes/storage-pg"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"

/**
 * The store. In memory by default: one process, nothing survives a restart. With a PostgreSQL URL
 * (e.g. `DATABASE_URL=postgres://user:pass@db:5432/app`), the PostgreSQL store: migrations run at
 * start, data survives restarts, and any number of instances of your service share the work.
 */
export const storeLayer = (databaseUrl: string | undefined): Layer.Layer<StoreServices, unknown> =>
  databaseUrl === undefined || databaseUrl === ""
    ? MemoryStoreLive
    : PgStoreLive({ url: Redacted.make(databaseUrl) })

export interface WesSettings {
  /** PostgreSQL URL; absent: the in-memory store. */
  readonly databaseUrl?: string | undefined
  /** Dispatcher tuning (every value has a production default). */
  readonly dispatcher?: Partial<DispatcherOptions>
}

/** Every service of WES: use cases (WorkflowService, RunnerService, ...), dispatcher, store, gateway. */
export const wesLayer = (settings: WesSettings = {}) => {
  const gateway = RunnerGatewayNode()
  return useCasesLayer({ dispatcher: settings.dispatcher ?? {} }).pipe(
    Layer.provideMerge(Layer.mergeAll(
      storeLayer(settings.databaseUrl),
      gateway,
      // Runner endpoints are checked (GET /system_stats) when registered.
      RunnerProbe.layer().pipe(Layer.provide(gateway)),
      // The default tier table; TierPolicy.layer({ pro: { active_workflows: 100 } }) changes it.
      TierPolicy.Default,
      PlatformLive
    ))
  )
}
