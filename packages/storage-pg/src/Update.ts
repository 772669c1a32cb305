/**
 * The UPDATE of a record: core's repositories hand over the changes of an edit (the fields it
 * writes, Changes.ts in core), so one statement writes those columns where the row is (by id,
 * and owner where it has one) and answers the row as stored after it. No read first, no
 * version, no retry: two edits of different fields of one row both survive, and neither waits
 * for the other's transaction.
 */
import type { StorageError } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as SqlClient from "effect/sql/SqlClient"
import type * as Statement from "effect/sql/Statement"
import * as Struct from "effect/Struct"
import { decodeFirst, orStorageError, run } from "./Sql.js"
import type { RowSchema, Table } from "./Table.js"

/**
 * Writes `changes` (some of the record's fields, in core's form) to the row `where` selects, in
 * one `UPDATE ... RETURNING` of every column; `notFound` when no row matches (nothing written).
 */
export const updateColumns = <S extends RowSchema>(sql: SqlClient.SqlClient, t: Table<S>) => {
  const name = sql(t.name)
  const columns = sql.literal(t.list())
  // The row schema with every field optional encodes the fields given, in their columns' forms.
  // (Typed as the row schema is: a table's columns need no services to encode.)
  const changed = t.row.mapFields(Struct.map(Schema.optionalKey)) as Schema.Top as Schema.Codec<Partial<S["Type"]>, Record<string, unknown>>
  const encode = Schema.encodeEffect(changed)
  const decode = decodeFirst(t.row)

  return <E>(
    operation: string,
    where: Statement.Fragment,
    changes: Partial<S["Type"]>,
    notFound: () => E
  ): Effect.Effect<S["Type"], E | StorageError> =>
    Effect.flatMap(encode(changes), (set) =>
      run(
        Object.keys(set).length === 0
          ? sql`SELECT ${columns} FROM ${name} WHERE ${where}`
          : sql`UPDATE ${name} SET ${sql.update(set)} WHERE ${where} RETURNING ${columns}`
      )).pipe(
        Effect.flatMap(decode),
        orStorageError(operation),
        Effect.flatMap(Option.match({ onNone: () => Effect.fail(notFound()), onSome: Effect.succeed }))
      )
}
