/** Users and API tokens in PostgreSQL. */
import * as SqlClient from "effect/sql/SqlClient"
import { AccountRepository, ApiToken, NotFound, User } from "@wes/core"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import {
  DbNullableTimestamp,
  DbTimestamp,
  decodeFirst,
  decodeRows,
  deleteRow,
  isId,
  limitOffset,
  orStorageError,
  pageOf,
  run,
  toDate,
  toNullableDate,
  updateRow
} from "./Sql.js"

const UserRow = Schema.Struct({ ...User.fields, created_at: DbTimestamp, updated_at: DbTimestamp })
const tokenTimestamps = { expires_at: DbNullableTimestamp, last_used_at: DbNullableTimestamp, created_at: DbTimestamp }
const TokenRow = Schema.Struct({ ...ApiToken.fields, ...tokenTimestamps })
/** A token joined with its user (the user's columns prefixed with `user_`). */
const TokenOwnerRow = Schema.Struct({
  ...ApiToken.fields,
  ...tokenTimestamps,
  user_email: User.fields.email,
  user_tier: User.fields.tier,
  user_created_at: DbTimestamp,
  user_updated_at: DbTimestamp
})

const USER_COLUMNS = "id, email, tier, created_at, updated_at"
const TOKEN_COLUMNS = "id, user_id, name, token_hash, expires_at, last_used_at, created_at"

const userColumns = (u: User) => ({
  id: u.id,
  email: u.email,
  tier: u.tier,
  created_at: toDate(u.created_at),
  updated_at: toDate(u.updated_at)
})

export const makePgAccountRepository = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const users = sql.literal(USER_COLUMNS)
  const tokens = sql.literal(TOKEN_COLUMNS)
  const decodeUser = decodeFirst(UserRow)
  const decodeToken = decodeFirst(TokenRow)

  return AccountRepository.of({
    insertUser: (u) =>
      run(sql`INSERT INTO users ${sql.insert(userColumns(u))}`).pipe(Effect.as(u), orStorageError("users.insert")),
    findUser: (id) =>
      isId(id)
        ? run(sql`SELECT ${users} FROM users WHERE id = ${id}`).pipe(Effect.flatMap(decodeUser), orStorageError("users.find"))
        : Effect.succeedNone,
    listUsers: (query) => {
      const { limit, offset } = limitOffset(query)
      const where = query.tier === undefined ? sql`TRUE` : sql`tier = ${query.tier}`
      return pageOf(
        "users.list",
        run(sql`SELECT ${users} FROM users WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT ${limit} OFFSET ${offset}`)
          .pipe(Effect.flatMap(decodeRows(UserRow))),
        sql`SELECT count(*)::int AS n FROM users WHERE ${where}`
      )
    },
    updateUser: (id, f) =>
      isId(id)
        ? updateRow(sql, {
          table: "users",
          id,
          select: sql`SELECT ${users} FROM users WHERE id = ${id}`,
          decode: decodeUser,
          columns: userColumns,
          notFound: NotFound.user
        }, (current) => Result.succeed(f(current)))
        : Effect.fail(NotFound.user()),
    insertToken: (t) =>
      run(sql`INSERT INTO api_tokens ${
        sql.insert({
          id: t.id,
          user_id: t.user_id,
          name: t.name,
          token_hash: t.token_hash,
          expires_at: toNullableDate(t.expires_at),
          last_used_at: toNullableDate(t.last_used_at),
          created_at: toDate(t.created_at)
        })
      }`).pipe(Effect.as(t), orStorageError("api_tokens.insert")),
    findTokenByHash: (hash) =>
      run(sql`SELECT t.id, t.user_id, t.name, t.token_hash, t.expires_at, t.last_used_at, t.created_at,
            u.email AS user_email, u.tier AS user_tier, u.created_at AS user_created_at, u.updated_at AS user_updated_at
          FROM api_tokens t JOIN users u ON u.id = t.user_id
          WHERE t.token_hash = ${hash}`).pipe(
        Effect.flatMap(decodeFirst(TokenOwnerRow)),
        Effect.map(Option.map((row) => ({
          token: {
            id: row.id,
            user_id: row.user_id,
            name: row.name,
            token_hash: row.token_hash,
            expires_at: row.expires_at,
            last_used_at: row.last_used_at,
            created_at: row.created_at
          },
          user: {
            id: row.user_id,
            email: row.user_email,
            tier: row.user_tier,
            created_at: row.user_created_at,
            updated_at: row.user_updated_at
          }
        }))),
        orStorageError("api_tokens.findByHash")
      ),
    findToken: (id) =>
      isId(id)
        ? run(sql`SELECT ${tokens} FROM api_tokens WHERE id = ${id}`).pipe(
          Effect.flatMap(decodeToken),
          orStorageError("api_tokens.find")
        )
        : Effect.succeedNone,
    listTokens: (userId) =>
      isId(userId)
        ? run(sql`SELECT ${tokens} FROM api_tokens WHERE user_id = ${userId} ORDER BY created_at DESC, id DESC`).pipe(
          Effect.flatMap(decodeRows(TokenRow)),
          orStorageError("api_tokens.list")
        )
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
