/** Users and API tokens in PostgreSQL. */
import * as SqlClient from "effect/sql/SqlClient"
import { AccountRepository, UserNotFound } from "@wes/core"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { deleteRow, isId, orStorageError, run } from "./Sql.js"
import { NEWEST_FIRST, tableOn } from "./Table.js"
import { apiTokens, users } from "./Tables.js"

/** The prefix of the user's columns in a token's join. */
const OWNER = "owner_"

/** A row of the token's join as the user's own row: its `owner_` columns without the prefix. */
const ownerOf = (row: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(row).flatMap(([k, v]) => k.startsWith(OWNER) ? [[k.slice(OWNER.length), v]] : []))

export const makePgAccountRepository = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const u = tableOn(sql, users)
  const t = tableOn(sql, apiTokens)
  const withOwner = sql.literal(`${apiTokens.list("t")}, ${users.list("u", OWNER)}`)

  return AccountRepository.of({
    insertUser: (user) => u.insert(user).pipe(Effect.as(user), orStorageError("users.insert")),
    findUser: (id) =>
      isId(id) ? u.findOne("users.find", sql`id = ${id}`) : Effect.succeedNone,
    listUsers: (query) => u.page("users.list", query.tier === undefined ? sql`TRUE` : sql`tier = ${query.tier}`, query),
    updateUser: (id, changes) => isId(id) ? u.update("users.update", sql`id = ${id}`, changes, () => new UserNotFound()) : Effect.fail(new UserNotFound()),
    insertToken: (token) => t.insert(token).pipe(Effect.as(token), orStorageError("api_tokens.insert")),
    findTokenByHash: (hash) =>
      run(sql`SELECT ${withOwner} FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE t.token_hash = ${hash}`).pipe(
        Effect.flatMap((rows) => Effect.all([t.decodeFirst(rows), u.decodeFirst(rows.map(ownerOf))])),
        Effect.map(([token, user]) => Option.zipWith(token, user, (token, user) => ({ token, user }))),
        orStorageError("api_tokens.findByHash")
      ),
    findToken: (id) =>
      isId(id) ? t.findOne("api_tokens.find", sql`id = ${id}`) : Effect.succeedNone,
    listTokens: (userId) =>
      isId(userId)
        ? t.findAll("api_tokens.list", sql`user_id = ${userId}`, NEWEST_FIRST)
        : Effect.succeed([]),
    deleteToken: (id) => deleteRow(sql, "api_tokens", id),
    recordTokenUse: (uses) => {
      // One row per token (the latest use), so the UPDATE ... FROM matches each token once.
      const latest = new Map<string, DateTime.Utc>()
      for (const { at, id } of uses) {
        if (!isId(id)) continue
        const seen = latest.get(id)
        if (seen === undefined || DateTime.isGreaterThan(at, seen)) latest.set(id, at)
      }
      if (latest.size === 0) return Effect.void
      const ids = Array.from(latest.keys())
      const ats = Array.from(latest.values(), (at) => DateTime.formatIso(at))
      return run(sql`UPDATE api_tokens AS t SET last_used_at = GREATEST(t.last_used_at, u.at)
          FROM unnest(${ids}::uuid[], ${ats}::timestamptz[]) AS u(id, at)
          WHERE t.id = u.id`).pipe(Effect.asVoid, orStorageError("api_tokens.recordUse"))
    }
  })
})

/** `AccountRepository` on the `SqlClient` in context. */
export const PgAccountRepository: Layer.Layer<AccountRepository, never, SqlClient.SqlClient> = Layer.effect(
  AccountRepository,
  makePgAccountRepository
)
