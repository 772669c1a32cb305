/**
 * Core's `AgentPresence` in memory: one process, so the presence only records where the agent is
 * and what it last reported (there is no other instance to take a runner lease from). Expiry is
 * judged on the clock, as PostgreSQL's rows are.
 */
import { AgentPresence, type AgentPresenceRecord, type AgentStatus } from "@wes/core"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"

interface Row {
  owner: string
  expiresAt: number
  status: AgentStatus | null
  reportedAt: number | null
}

/** Presence rows keyed by lower-cased runner id. */
export const makeMemoryAgentPresence = (): AgentPresence["Service"] => {
  const rows = new Map<string, Row>()
  const key = (runnerId: string) => runnerId.toLowerCase()
  return AgentPresence.of({
    take: (runnerId, owner, leaseMs) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const row = rows.get(key(runnerId))
        rows.set(key(runnerId), { owner, expiresAt: now + leaseMs, status: row?.status ?? null, reportedAt: row?.reportedAt ?? null })
      }),
    renew: (runnerId, owner, leaseMs) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const row = rows.get(key(runnerId))
        if (row === undefined || row.owner !== owner) return false
        row.expiresAt = now + leaseMs
        return true
      }),
    report: (runnerId, owner, status) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const row = rows.get(key(runnerId))
        if (row === undefined || row.owner !== owner) return
        row.status = status
        row.reportedAt = now
      }),
    release: (runnerId, owner) =>
      Effect.sync(() => {
        const row = rows.get(key(runnerId))
        if (row !== undefined && row.owner === owner) row.expiresAt = Number.NEGATIVE_INFINITY
      }),
    find: (runnerId) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const row = rows.get(key(runnerId))
        return row === undefined ? Option.none() : Option.some<AgentPresenceRecord>({
          runner_id: key(runnerId),
          owner: row.owner,
          live: row.expiresAt > now,
          status: row.status,
          reported_at: row.reportedAt === null ? null : new Date(row.reportedAt).toISOString()
        })
      })
  })
}

/** A fresh, empty presence table. */
export const MemoryAgentPresence: Layer.Layer<AgentPresence> = Layer.sync(AgentPresence, makeMemoryAgentPresence)
