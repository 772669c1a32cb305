/**
 * Runner tokens in memory. A token belongs to a runner of the memory runner repository it is
 * made with: a runner gone takes its tokens with it (as PostgreSQL's ON DELETE CASCADE does),
 * swept on every read.
 */
import { type RunnerToken, RunnerTokenRepository } from "@wes/core"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

/** Whether a runner is still stored (the memory runner repository's own check). */
export type RunnerExists = (runnerId: string) => boolean

const newestFirst = (a: RunnerToken, b: RunnerToken): number =>
  DateTime.toEpochMillis(b.created_at) - DateTime.toEpochMillis(a.created_at) || (a.id < b.id ? 1 : -1)

export const makeMemoryRunnerTokenRepository = (exists: RunnerExists): RunnerTokenRepository["Service"] => {
  const byId = new Map<string, RunnerToken>()
  const byHash = new Map<string, string>()

  const remove = (t: RunnerToken) => {
    byId.delete(t.id)
    byHash.delete(t.token_hash)
  }
  /** The token, unless its runner is gone (then it goes too). */
  const live = (t: RunnerToken | undefined): Option.Option<RunnerToken> => {
    if (t === undefined) return Option.none()
    if (exists(t.runner_id)) return Option.some(t)
    remove(t)
    return Option.none()
  }
  const ofRunner = (runnerId: string): Array<RunnerToken> => {
    const all = Array.from(byId.values()).filter((t) => t.runner_id === runnerId)
    if (exists(runnerId)) return all.sort(newestFirst)
    all.forEach(remove)
    return []
  }

  return RunnerTokenRepository.of({
    insert: (token, liveLimit) =>
      Effect.sync(() => {
        if (!exists(token.runner_id)) return "runner_gone"
        if (ofRunner(token.runner_id).filter((t) => t.revoked_at === null).length >= liveLimit) return "limit_reached"
        byId.set(token.id, token)
        byHash.set(token.token_hash, token.id)
        return "inserted"
      }),
    findByHash: (hash) => Effect.sync(() => live(byId.get(byHash.get(hash) ?? ""))),
    findById: (id) => Effect.sync(() => live(byId.get(id))),
    list: (runnerId) => Effect.sync(() => ofRunner(runnerId)),
    revoke: (runnerId, id, at, keepRevoked) =>
      Effect.sync(() => {
        const found = Option.filter(live(byId.get(id)), (t) => t.runner_id === runnerId)
        if (Option.isNone(found)) return found
        const revoked = found.value.revoked_at === null ? { ...found.value, revoked_at: at } : found.value
        byId.set(id, revoked)
        const byRevocation = ofRunner(runnerId).filter((t) => t.revoked_at !== null)
          .sort((a, b) => DateTime.toEpochMillis(b.revoked_at!) - DateTime.toEpochMillis(a.revoked_at!) || (a.id < b.id ? 1 : -1))
        byRevocation.slice(keepRevoked).forEach(remove)
        return Option.some(revoked)
      }),
    recordUse: (id, at) =>
      Effect.sync(() => {
        const t = byId.get(id)
        if (t === undefined || (t.last_used_at !== null && DateTime.isGreaterThanOrEqualTo(t.last_used_at, at))) return
        byId.set(id, { ...t, last_used_at: at })
      })
  })
}
