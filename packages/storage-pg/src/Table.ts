/**
 * A table described once, by its row schema: core's record with each field in its column's form
 * (timestamps as `Date`, JSON as JSON text). Everything a repository says about the table comes
 * from it: the column lists of SELECT and RETURNING, the decoding of rows, the parameters of an
 * INSERT (the record encoded), and the UPDATE of the columns an edit changes.
 */
import type { PageRequest, Paged, StorageError } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as SqlClient from "effect/sql/SqlClient"
import type * as Statement from "effect/sql/Statement"
import { decodeFirst, decodeRows, limitOffset, orStorageError, pageOf, run } from "./Sql.js"
import { updateColumns } from "./Update.js"

/** A row schema: a struct whose fields are the table's columns, in the order they are listed. */
export type RowSchema = Schema.Struct<Schema.Struct.Fields> & Schema.Codec<object, Record<string, unknown>>

export interface Table<S extends RowSchema> {
  readonly name: string
  readonly row: S
  readonly columns: ReadonlyArray<string>
  /**
   * The SELECT list of every column: each qualified by `alias` and renamed `prefix` + its name
   * when given (a join that reads two tables).
   */
  readonly list: (alias?: string, prefix?: string) => string
}

/**
 * The table `name` whose columns are the fields of `row`. `read` gives the SQL that reads a
 * column when it is not the column itself (e.g. a `bigint` read as `float8`).
 */
export const table = <S extends RowSchema>(
  name: string,
  row: S,
  read: Readonly<Record<string, (column: string) => string>> = {}
): Table<S> => {
  const columns = Object.keys(row.fields)
  return {
    name,
    row,
    columns,
    list: (alias, prefix) =>
      columns.map((c) => {
        const column = alias === undefined ? c : `${alias}.${c}`
        const expression = read[c]?.(column) ?? column
        return prefix === undefined && expression === column ? column : `${expression} AS ${prefix ?? ""}${c}`
      }).join(", ")
  }
}

/** The order of every list: newest first, ties broken by the larger id (as the other stores list). */
export const NEWEST_FIRST = "ORDER BY created_at DESC, id DESC"

/** The statements of `t` on `sql`: reads, INSERT and UPDATE of its records. */
export const tableOn = <S extends RowSchema>(sql: SqlClient.SqlClient, t: Table<S>) => {
  const name = sql(t.name)
  const columns = sql.literal(t.list())
  const encode = Schema.encodeEffect(t.row)
  const decodeOne = decodeFirst(t.row)
  const decodeAll = decodeRows(t.row)
  const select = (where: Statement.Fragment) => sql`SELECT ${columns} FROM ${name} WHERE ${where}`

  return {
    /** Every column, for SELECT and RETURNING. */
    columns,
    decodeFirst: decodeOne,
    decodeRows: decodeAll,
    /** SELECT of every column of the rows `where` matches. */
    select,
    /** The row `where` matches, if any. */
    findOne: (operation: string, where: Statement.Fragment): Effect.Effect<Option.Option<S["Type"]>, StorageError> =>
      run(select(where)).pipe(Effect.flatMap(decodeOne), orStorageError(operation)),
    /** The rows `where` matches, in the order `order` says (`ORDER BY ...`). */
    findAll: (operation: string, where: Statement.Fragment, order: string): Effect.Effect<ReadonlyArray<S["Type"]>, StorageError> =>
      run(sql`${select(where)} ${sql.literal(order)}`).pipe(Effect.flatMap(decodeAll), orStorageError(operation)),
    /** A page of the rows `where` matches, newest first (ties: larger id first), and their total. */
    page: (operation: string, where: Statement.Fragment, page: PageRequest): Effect.Effect<Paged<S["Type"]>, StorageError> => {
      const { limit, offset } = limitOffset(page)
      return pageOf(
        operation,
        run(sql`${select(where)} ${sql.literal(NEWEST_FIRST)} LIMIT ${limit} OFFSET ${offset}`).pipe(Effect.flatMap(decodeAll)),
        sql`SELECT count(*)::int AS n FROM ${name} WHERE ${where}`
      )
    },
    /** INSERT of the record, then `then` (e.g. an ON CONFLICT clause). */
    insert: (record: S["Type"], then: Statement.Fragment = sql.literal("")) =>
      Effect.flatMap(encode(record), (row) => run(sql`INSERT INTO ${name} ${sql.insert(row)} ${then}`)),
    /** Writes an edit's changes to the row `where` selects, in one statement (Update.ts). */
    update: updateColumns(sql, t)
  }
}
