/**
 * The UPDATE of a record: core's repositories change a row with a function of it, so the row is
 * read (without a lock or a transaction), then one UPDATE writes the columns the function
 * changed, guarded by the row's version as read. Two edits of one row never lose each other's
 * changes, and neither waits for the other's transaction.
 */
import type { NotFound, StorageError } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as SqlClient from "effect/sql/SqlClient"
import type * as Statement from "effect/sql/Statement"
import { decodeFirst, orStorageError, run } from "./Sql.js"
import type { RowSchema, Table } from "./Table.js"

/** Encoded column values compared: JSON text, `Date`s (as ISO times), arrays, scalars. */
const same = (a: unknown, b: unknown): boolean => a === b || JSON.stringify(a) === JSON.stringify(b)

/** The columns whose encoded values differ between `before` and `after`; never `id`. */
export const changedColumns = (before: Record<string, unknown>, after: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(after).filter(([column, value]) => column !== "id" && !same(before[column], value)))

const decodeVersion = decodeFirst(Schema.Struct({ row_version: Schema.String }))

/**
 * Replaces the row `where` selects (one row: by id, and owner where it has one) with `f` of it,
 * writing only the columns that changed: read the row and its version (`xmin`, which every write
 * of the row changes), then UPDATE guarded by `where` and that version. When another write came
 * between, `f` is applied again to the row as it is now (a retry always follows another write
 * that succeeded, so they end). `notFound` when no row matches; nothing changed, nothing written.
 */
export const updateChanged = <S extends RowSchema>(sql: SqlClient.SqlClient, t: Table<S>) => {
  const name = sql(t.name)
  const columns = sql.literal(t.list())
  const encode = Schema.encodeEffect(t.row)
  const decode = decodeFirst(t.row)
  type A = S["Type"]

  const attempt = (operation: string, where: Statement.Fragment, f: (current: A) => A, notFound: () => NotFound) =>
    Effect.gen(function*() {
      const rows = yield* run(sql`SELECT ${columns}, xmin::text AS row_version FROM ${name} WHERE ${where}`).pipe(
        orStorageError(`${operation} (read)`)
      )
      const [current, version] = yield* Effect.all([decode(rows), decodeVersion(rows)]).pipe(orStorageError(`${operation} (read)`))
      if (Option.isNone(current) || Option.isNone(version)) return yield* Effect.fail(notFound())
      const next = f(current.value)
      const [before, after] = yield* Effect.all([encode(current.value), encode(next)]).pipe(orStorageError(`${operation} (encode)`))
      const changed = changedColumns(before, after)
      if (Object.keys(changed).length === 0) return Option.some(next)
      const written = yield* run(sql`UPDATE ${name} SET ${sql.update(changed)}
        WHERE ${where} AND xmin = ${version.value.row_version}::xid RETURNING 1`).pipe(orStorageError(`${operation} (write)`))
      return written.length === 0 ? Option.none() : Option.some(next)
    })

  return (operation: string, where: Statement.Fragment, f: (current: A) => A, notFound: () => NotFound): Effect.Effect<A, NotFound | StorageError> => {
    const loop: Effect.Effect<A, NotFound | StorageError> = Effect.flatMap(
      attempt(operation, where, f, notFound),
      Option.match({ onNone: () => loop, onSome: Effect.succeed })
    )
    return loop
  }
}
