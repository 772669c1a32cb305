/**
 * The `workflows` table, described once (Table.ts): `WorkflowRow` is core's record with each
 * field in its column's form, and everything else is derived from it: the column lists the
 * statements read, decoding of rows, and the parameters of an insert (encoding). `summaryJson`
 * builds a workflow's summary (the data of its status events) from a row, inside a statement,
 * from the fields of core's `WorkflowSummary`. Its outputs' table is here too.
 */
import { Timestamp, Workflow, WorkflowOutput, WorkflowSummary } from "@wes/core"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import { DbNullableTimestamp, DbTimestamp, JsonColumn, JsonOf } from "./Sql.js"
import { table } from "./Table.js"

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
  attempts: JsonOf(Workflow.fields.attempts),
  models: JsonColumn(Workflow.fields.models)
})

const { workflow_json: _definition, ...headFields } = WorkflowRow.fields
/** A workflow row without its definition. */
export const WorkflowHeadRow = Schema.Struct(headFields)

export const workflows = table("workflows", WorkflowRow)
/** The columns of a workflow but its definition (which most reads and writes leave alone). */
export const workflowHeads = table("workflows", WorkflowHeadRow)
/** What a list shows of a workflow. */
export const workflowSummaries = table("workflows", Schema.Struct({ ...WorkflowSummary.fields, ...workflowTimestamps }))

/** `size` is a `bigint` column, read as `float8` (exact for every size a file can have). */
export const workflowOutputs = table(
  "workflow_outputs",
  Schema.Struct({ ...WorkflowOutput.fields, created_at: DbTimestamp, expired_at: DbNullableTimestamp }),
  { size: (column) => `${column}::float8` }
)

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
