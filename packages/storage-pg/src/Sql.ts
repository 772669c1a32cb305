/**
 * What every repository of this package shares: turning driver errors into core's
 * `StorageError`, transactions, row decoding, and the conversions of parameters.
 */
import {
  activeStatuses,
  isUuid,
  LimitReached,
  type PageRequest,
  type Paged,
  StorageError,
  storeErrors,
  type WorkflowStatus
} from "@wes/core"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as SchemaGetter from "effect/SchemaGetter"
import type * as SqlClient from "effect/sql/SqlClient"
import { isSqlError, type SqlError } from "effect/sql/SqlError"
import type * as Statement from "effect/sql/Statement"

/** The SQLSTATE of a PostgreSQL error, when the driver's cause (in the error's reason) carries one. */
const sqlState = (error: SqlError): string | undefined => {
  const cause: unknown = error.reason.cause
  return typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string"
    ? cause.code
    : undefined
}

/**
 * Core's `StorageError` for a failed operation. The message names the operation, the driver's
 * fixed message and the SQLSTATE; never parameters or row values (PostgreSQL's own messages
 * may quote them, so they stay in `cause`, for logs only).
 */
export const storageError = (operation: string) => (error: SqlError | Schema.SchemaError): StorageError => {
  if (isSqlError(error)) {
    const code = sqlState(error)
    return new StorageError({
      message: `PostgreSQL store: ${operation} failed: ${error.message}${code === undefined ? "" : ` (SQLSTATE ${code})`}`,
      cause: error
    })
  }
  return new StorageError({ message: `PostgreSQL store: ${operation} read a row it could not decode`, cause: error })
}

/** Maps the SQL and decoding errors of `self` to `StorageError`. */
export const orStorageError = (operation: string) =>
<A, R>(self: Effect.Effect<A, SqlError | Schema.SchemaError, R>): Effect.Effect<A, StorageError, R> =>
  Effect.catch(self, failCounted(operation))

/** Fails with the `StorageError` of `error`, counted in `wes_store_errors_total` under `operation`. */
const failCounted = (operation: string) => (error: SqlError | Schema.SchemaError) =>
  Effect.andThen(Metric.update(Metric.withAttributes(storeErrors, { operation }), 1), Effect.fail(storageError(operation)(error)))

/**
 * Runs `effect` in a transaction (a savepoint inside an open one). A failed BEGIN or COMMIT
 * fails with `SqlError`, but `effect/sql` turns a failed ROLLBACK (or savepoint release) into a
 * defect; both become `StorageError`, so a lost connection is a retryable 503, not a crash.
 */
export const transaction = (sql: SqlClient.SqlClient, operation: string) =>
<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | StorageError, R> =>
  sql.withTransaction(effect).pipe(
    // Its own failures (BEGIN, COMMIT, ROLLBACK) are counted here; the statements' inside it by their own operations.
    Effect.catch((e): Effect.Effect<never, E | StorageError> => isSqlError(e) ? failCounted(operation)(e) : Effect.fail(e)),
    Effect.catchDefect((defect) => isSqlError(defect) ? failCounted(operation)(defect) : Effect.die(defect))
  )

/** Runs a statement without the client's name transforms (an embedder's client may have some). */
export const run = <A extends object>(statement: Statement.Statement<A>) => statement.withoutTransform

/** Decodes rows with `schema`; a row that does not fit is a `SchemaError`. */
export const decodeRows = <S extends Schema.Decoder<unknown>>(schema: S) => {
  const decode = Schema.decodeUnknownEffect(Schema.Array(schema))
  return (rows: ReadonlyArray<unknown>): Effect.Effect<ReadonlyArray<S["Type"]>, Schema.SchemaError> => decode(rows)
}

/** The first decoded row, if any. */
export const decodeFirst = <S extends Schema.Decoder<unknown>>(schema: S) => {
  const decode = decodeRows(schema)
  return (rows: ReadonlyArray<unknown>) => Effect.map(decode(rows.slice(0, 1)), (a) => Option.fromUndefinedOr(a[0]))
}

/** A `timestamptz` column as core's `DateTime.Utc` (the driver reads it as a `Date`). */
export const DbTimestamp = Schema.DateTimeUtcFromDate
export const DbNullableTimestamp = Schema.NullOr(Schema.DateTimeUtcFromDate)

/**
 * A `jsonb` column holding a schema's JSON form (`toCodecJson`: timestamps as ISO strings, as
 * the API writes them): the driver's parsed value decoded by it, written as JSON text.
 */
export const JsonOf = <S extends Schema.Top>(schema: S) =>
  Schema.Unknown.pipe(Schema.decodeTo(Schema.toCodecJson(schema), {
    decode: SchemaGetter.passthrough({ strict: false }),
    encode: SchemaGetter.transform((json) => JSON.stringify(json))
  }))

/**
 * A `jsonb` or `json` column holding a schema's values as they are (no timestamps in them): the
 * driver's parsed value decoded by it, written as JSON text (the driver would turn a JS array
 * into a PostgreSQL array).
 */
export const JsonColumn = <S extends Schema.Top>(schema: S) =>
  Schema.Unknown.pipe(Schema.decodeTo(Schema.toType(schema), {
    decode: SchemaGetter.passthrough({ strict: false }),
    encode: SchemaGetter.transform((a) => JSON.stringify(a))
  }))

/** A `DateTime.Utc` as a `timestamptz` parameter. */
export const toDate = (t: DateTime.Utc): Date => DateTime.toDateUtc(t)

/**
 * A value for a `jsonb` column, serialized here: the driver would turn a JS array into a
 * PostgreSQL array literal rather than JSON.
 */
export const toJson = (value: unknown): string => JSON.stringify(value ?? null)

/**
 * Ids are `uuid` columns. A string that is not a UUID can name no stored row, so lookups treat
 * it as missing instead of letting PostgreSQL reject the cast.
 */
export const isId = (s: string): boolean => isUuid(s)

/** PostgreSQL spells ids in lowercase: this gives an id a row returns back as the caller spelled it in `ids`. */
export const spelledAsAsked = (ids: ReadonlyArray<string>): (id: string) => string => {
  const asAsked = new Map(ids.map((id) => [id.toLowerCase(), id]))
  return (id) => asAsked.get(id) ?? id
}

/** LIMIT and OFFSET of a page. */
export const limitOffset = (page: PageRequest): { readonly limit: number; readonly offset: number } => ({
  limit: page.per_page,
  offset: (page.page - 1) * page.per_page
})

/** `count(*)` is cast to `int` in every query; this reads it. */
export const CountRow = Schema.Struct({ n: Schema.Int })
export const readCount = (rows: ReadonlyArray<unknown>) =>
  Effect.map(decodeFirst(CountRow)(rows), Option.match({ onNone: () => 0, onSome: (r) => r.n }))

/**
 * The SQL list of unfinished statuses, e.g. `('accepted', 'uploaded', 'queued', 'running')`.
 * It must match the predicate of the partial indexes (migration 0002) for PostgreSQL to use them.
 */
export const UNFINISHED_STATUSES_SQL = `(${activeStatuses.map((s) => `'${s}'`).join(", ")})`

/** Workflows in these statuses wait to be submitted: the dispatcher claims them. */
export const WAITING_STATUSES: ReadonlyArray<WorkflowStatus> = ["accepted", "uploaded"]

/** `WAITING_STATUSES` in SQL; it must match the predicate of migration 0009's partial indexes. */
export const WAITING_STATUSES_SQL = `(${WAITING_STATUSES.map((s) => `'${s}'`).join(", ")})`

/**
 * Namespaces of the two-key advisory locks (`pg_advisory_xact_lock(namespace, hashtext(id))`),
 * so the locks of different purposes never collide.
 */
export const LockNamespace = {
  /** Inserts counted against a user's limits, and idempotency keys. */
  userInserts: 0x5745_5301,
  /** Blob keys being replaced. */
  blobKey: 0x5745_5302
} as const

/**
 * Takes the transaction-scoped lock on a user's counted inserts: between it and COMMIT no other
 * transaction can count and insert for this user, so a limit cannot be overshot.
 */
export const lockUserInserts = (sql: SqlClient.SqlClient, userId: string): Effect.Effect<void, StorageError> =>
  run(sql`SELECT pg_advisory_xact_lock(${sql.literal(String(LockNamespace.userInserts))}, hashtext(${userId}))`).pipe(
    Effect.asVoid,
    orStorageError("user insert lock")
  )

/** The user's rows in `table` (what the tier's limits count). */
export const countOwned = (
  sql: SqlClient.SqlClient,
  table: "templates" | "runners",
  userId: string,
  operation = `${table}.count`
): Effect.Effect<number, StorageError> =>
  isId(userId)
    ? run(sql`SELECT count(*)::int AS n FROM ${sql(table)} WHERE user_id = ${userId}`).pipe(
      Effect.flatMap(readCount),
      orStorageError(operation)
    )
    : Effect.succeed(0)

/**
 * Inserts a record counted against the user's limit of rows in `table` (`LimitReached` names
 * it): lock, count, then insert, in one transaction. Without a limit it simply inserts.
 */
export const insertWithinLimit = (
  sql: SqlClient.SqlClient,
  table: "templates" | "runners",
  userId: string,
  limit: number | undefined,
  insert: Effect.Effect<unknown, StorageError>
): Effect.Effect<void, LimitReached | StorageError> => {
  if (limit === undefined) return Effect.asVoid(insert)
  return transaction(sql, `${table}.insert`)(Effect.gen(function*() {
    yield* lockUserInserts(sql, userId)
    const count = yield* countOwned(sql, table, userId, `${table}.insert (count)`)
    if (count + 1 > limit) return yield* Effect.fail(new LimitReached({ limit: table }))
    yield* insert
  }))
}

/** A page of `items` and the `total` across pages, read together. */
export const pageOf = <A>(
  operation: string,
  items: Effect.Effect<ReadonlyArray<A>, SqlError | Schema.SchemaError>,
  total: Statement.Statement<{ n: number }>
): Effect.Effect<Paged<A>, StorageError> =>
  Effect.all({ items, total: Effect.flatMap(run(total), readCount) }, { concurrency: 2 }).pipe(orStorageError(operation))

/** Deletes one row (of this owner, when `userId` is given); false when there was none. */
export const deleteRow = (sql: SqlClient.SqlClient, table: string, id: string, userId?: string) =>
  isId(id) && (userId === undefined || isId(userId))
    ? run(sql`DELETE FROM ${sql(table)}
        WHERE ${sql.and([sql`id = ${id}`, ...(userId === undefined ? [] : [sql`user_id = ${userId}`])])}
        RETURNING id`).pipe(Effect.map((rows) => rows.length > 0), orStorageError(`${table}.delete`))
    : Effect.succeed(false)
