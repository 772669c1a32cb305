/**
 * Where each runner's agent is connected (issue 34): with several WES instances, the instance
 * holding an agent's connection drives that runner. On connect it takes the runner's presence (a
 * lease it renews while connected) and the runner's lease away from whoever drove it; on
 * disconnect it releases the presence. Other instances do not acquire a runner whose agent is
 * live elsewhere (`presenceGuardedOwnership`). The latest status the agent reported is kept here,
 * so any instance can show it. Direct runners have no presence: nothing changes for them.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { StorageError } from "../domain/Errors.js"
import type { AgentStatus } from "./RunnerAgents.js"
import { RunnerOwnership } from "./Dispatch.js"

/** A runner's presence as stored. */
export interface AgentPresenceRecord {
  readonly runner_id: string
  /** The instance that holds (or last held) the agent's connection. */
  readonly owner: string
  /** Whether that presence is live (held, not expired). */
  readonly live: boolean
  /** The latest status its agent reported; null before the first. */
  readonly status: AgentStatus | null
  /** When that status was reported (ISO 8601); null before the first. */
  readonly reported_at: string | null
}

export class AgentPresence extends Context.Service<AgentPresence, {
  /**
   * `owner` holds `runnerId`'s agent until `leaseMs` from now, replacing whoever held it, and
   * takes the runner's lease from the instance driving it (whose renewal then fails, so it stops).
   */
  readonly take: (runnerId: string, owner: string, leaseMs: number) => Effect.Effect<void, StorageError>
  /** Extends `owner`'s presence; false when it is no longer `owner`'s (another instance took it). */
  readonly renew: (runnerId: string, owner: string, leaseMs: number) => Effect.Effect<boolean, StorageError>
  /** Records the status the agent reported through `owner`'s connection. */
  readonly report: (runnerId: string, owner: string, status: AgentStatus) => Effect.Effect<void, StorageError>
  /** Ends `owner`'s presence (the last status is kept); a no-op when another instance holds it. */
  readonly release: (runnerId: string, owner: string) => Effect.Effect<void, StorageError>
  /** The runner's presence, if its agent ever connected. */
  readonly find: (runnerId: string) => Effect.Effect<Option.Option<AgentPresenceRecord>, StorageError>
}>()("@wes/core/AgentPresence") {}

/**
 * `inner`, except that a runner whose agent is live on another instance is not acquired (that
 * instance drives it). One read per acquisition, none per call: a driver acquires once.
 */
export const presenceGuardedOwnership = (
  inner: RunnerOwnership["Service"],
  presence: AgentPresence["Service"]
): RunnerOwnership["Service"] =>
  RunnerOwnership.of({
    instanceId: inner.instanceId,
    acquire: (runnerId) =>
      Effect.flatMap(presence.find(runnerId), (found) =>
        Option.isSome(found) && found.value.live && found.value.owner !== inner.instanceId
          ? Effect.succeedNone
          : inner.acquire(runnerId))
  })
