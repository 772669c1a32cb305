/** Core's `RunnerLoad` over the memory store's runners and workflow table. */
import {
  type ManagedRunnerRepository,
  managedRunnerTarget,
  RunnerLoad,
  type RunnerRepository,
  userRunnerTarget
} from "@wes/core"
import * as Effect from "effect/Effect"
import type { WorkflowTable } from "./WorkflowTable.js"

export const makeMemoryRunnerLoad = (
  runners: RunnerRepository["Service"],
  managed: ManagedRunnerRepository["Service"],
  table: WorkflowTable
) =>
  RunnerLoad.of({
    candidates: (userId, types) =>
      Effect.gen(function*() {
        const own = yield* runners.listActiveForUser(userId)
        const shared = types.length === 0 ? [] : yield* managed.listActive(types)
        return [...own.map(userRunnerTarget), ...shared.map(managedRunnerTarget)].map((target) => ({
          target,
          in_flight: table.inFlightByRunner.get(target.id) ?? 0
        }))
      })
  })
