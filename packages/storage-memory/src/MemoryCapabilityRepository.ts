/** Runners' capabilities in memory: a map by runner id; `due` walks the active runners. */
import { CapabilityRepository, type StoredCapabilities } from "@wes/core"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { ActiveRunners } from "./MemoryRepositories.js"

export const makeMemoryCapabilityRepository = (runners: ReadonlyArray<ActiveRunners>) => {
  const byRunner = new Map<string, StoredCapabilities>()
  return CapabilityRepository.of({
    put: (record) =>
      Effect.sync(() => {
        // An older read (a slower instance) does not replace a newer one.
        const current = byRunner.get(record.runner_id)
        if (current === undefined || DateTime.isLessThanOrEqualTo(current.read_at, record.read_at)) byRunner.set(record.runner_id, record)
      }),
    get: (runnerId) => Effect.sync(() => Option.fromNullishOr(byRunner.get(runnerId))),
    remove: (runnerId) => Effect.sync(() => void byRunner.delete(runnerId)),
    due: (before, limit) =>
      Effect.sync(() => {
        const readAt = (id: string) => {
          const r = byRunner.get(id)
          return r === undefined ? -Infinity : DateTime.toEpochMillis(r.read_at)
        }
        const cutoff = DateTime.toEpochMillis(before)
        return runners.flatMap((r) => r.activeRefs())
          .filter((ref) => readAt(ref.id) < cutoff)
          .sort((a, b) => readAt(a.id) - readAt(b.id) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
          .slice(0, Math.max(0, limit))
      })
  })
}
