/**
 * The `workflows` table, described once: `WorkflowRow` is core's record with each field in its
 * column's form, and everything else is derived from it: the column lists the statements read,
 * decoding of rows, and the parameters of an insert (encoding). `SUMMARY_JSON` builds a workflow's
 * summary (the data of its status events) from a row, inside a statement, from the fields of
 * core's `WorkflowSummary`.
 */
import { Timestamp, Workflow, WorkflowSummary } from "@wes/core"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import * as SchemaGetter from "effect/SchemaGetter"
import { DbNullableTimestamp, DbTimestamp, JsonOf } from "./Sql.js"

/** A `jsonb` column: read as the parsed value, written as JSON text (the driver would turn a JS array into a PostgreSQL array). */
const JsonColumn = <S extends Schema.Top>(schema: S) =>
  Schema.Unknown.pipe(Schema.decodeTo(Schema.toType(schema), {
    decode: SchemaGetter.passthrough({ strict: false }),
    encode: SchemaGetter.transform((a) => JSON.stringify(a))
  }))

export const workflowTimestamps = {
  created_at: DbTimestamp,
  updated_at: DbTimestamp,
  started_at: DbNullableTimestamp,
  completed_at: DbNullableTimestamp
}

/** `priority` as its column stores it: 0 low, 1 normal, 2 high (the claim orders by it). */
const PriorityColumn = Schema.Literals([0, 1, 2]).transform(["low", "normal", "high"])

const { workflow_json: _json, ...insertFields } = Workflow.fields

/**
 * A new row as `jsonb_populate_record` reads it: core's JSON form (`toCodecJson`: timestamps as
 * ISO strings), each column in its own type; without the definition, which goes in as a
 * parameter of its own (encoding drops it).
 */
export const WorkflowInsert = Schema.toCodecJson(Schema.Struct({ ...insertFields, priority: PriorityColumn }))

/** `attempts` in its JSON form (timestamps as ISO strings), as the column stores it. */
export const AttemptsJson = Schema.toCodecJson(Workflow.fields.attempts)

/** A workflow row, decoded to core's record (and encoded to insert parameters). */
export const WorkflowRow = Schema.Struct({
  ...Workflow.fields,
  ...workflowTimestamps,
  submitted_at: DbNullableTimestamp,
  workflow_json: JsonColumn(Workflow.fields.workflow_json),
  workflow_params: JsonColumn(Workflow.fields.workflow_params),
  priority: PriorityColumn,
  attempts: JsonOf(Workflow.fields.attempts)
})

const { workflow_json: _definition, ...headFields } = WorkflowRow.fields
/** A workflow row without its definition. */
export const WorkflowHeadRow = Schema.Struct(headFields)

/** Every column of `WorkflowRow`, for SELECT and RETURNING lists. */
export const WORKFLOW_COLUMNS = Object.keys(WorkflowRow.fields)
export const HEAD_COLUMNS = Object.keys(WorkflowHeadRow.fields)

/** `created_at` as core's Timestamp prints it (`DateTime.formatIso`: milliseconds, `Z`). */
export const iso = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`

const isTimestamp = (schema: Schema.Top): boolean =>
  schema.ast === Timestamp.ast || (SchemaAST.isUnion(schema.ast) && schema.ast.types.some((t) => t === Timestamp.ast))

/** SQL: the summary of the row `alias`, as `jsonb`, equal to core's `summaryData` of it. */
export const summaryJson = (alias: string): string =>
  `jsonb_build_object(${
    Object.entries(WorkflowSummary.fields).map(([key, schema]) =>
      `'${key}', ${isTimestamp(schema) ? iso(`${alias}.${key}`) : `to_jsonb(${alias}.${key})`}`
    ).join(", ")
  })`
