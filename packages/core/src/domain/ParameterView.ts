/**
 * A workflow's parameters as a form shows them before create (`POST /v1/workflow/parameters`):
 * each placeholder with the inputs it fills and the type each input takes on the runners the
 * workflow may go to, which is what create converts the value to (capabilities/TypedParams.ts).
 */
import * as Schema from "effect/Schema"
import { inferType } from "./Conversion.js"
import { InputType } from "./InputTypes.js"
import { type InputTypeIndex, typeAt } from "./TypedParams.js"
import { TagList } from "./Runner.js"
import { isJsonObject, JsonObject } from "./Json.js"
import { fieldName, type Placeholder, placeholderKey } from "./Placeholders.js"

const TypeOrText = Schema.NullOr(InputType).annotate({
  description: "What the value is converted to: BOOLEAN (true/false, yes/no, 1/0), INT or FLOAT (within min and max, " +
    "an INT on the grid of step), COMBO (one of options); null: sent as text (a text input, a file, types not known or " +
    "runners that disagree, each then checking the value by its own)"
})

export const ParameterInput = Schema.Struct({
  node: Schema.String,
  class_type: Schema.String,
  input: Schema.String,
  type: TypeOrText
}).annotate({ identifier: "ParameterInput" })

export const WorkflowParameter = Schema.Struct({
  field: Schema.String.annotate({ description: "The form field: `$name` or `#name`" }),
  placeholder: Schema.String.annotate({ description: "As workflow_params writes it: `$text(name)`, `$file(name)`, `#choice(name)`" }),
  kind: Schema.Literals(["text", "file", "choice"]),
  default: Schema.NullOr(Schema.String),
  options: Schema.Array(Schema.String).annotate({ description: "A choice's options (empty: any value)" }),
  type: TypeOrText.annotate({ description: "The type every input it fills takes (null when they differ, or text)" }),
  inputs: Schema.Array(ParameterInput)
}).annotate({ identifier: "WorkflowParameter" })
export type WorkflowParameter = typeof WorkflowParameter.Type

export const WorkflowParameters = Schema.Struct({ parameters: Schema.Array(WorkflowParameter) })
  .annotate({ identifier: "WorkflowParameters" })

export const DescribeParametersRequest = Schema.Struct({
  // Described for this request, so written in place rather than as the shared component.
  workflow_json: Schema.optionalKey(JsonObject.annotate({
    identifier: undefined,
    description: "The workflow in ComfyUI API format",
    message: "must be a JSON object (the workflow in ComfyUI API format)"
  })),
  template_id: Schema.optionalKey(Schema.String.annotate({ description: "Or one of your templates" })),
  tags: Schema.optionalKey(TagList.annotate({ description: "The tags the workflow will be created with (they select its runners)" }))
}).annotate({ identifier: "DescribeParametersRequest" })

/** One type when every candidate agrees on it, else null. */
const agreed = (types: ReadonlyArray<InputType | undefined>): InputType | null => {
  const first = types[0]
  return first !== undefined && types.every((t) => t !== undefined && JSON.stringify(t) === JSON.stringify(first)) ? first : null
}

/**
 * Each placeholder of `graph` with its inputs' types on the runners of `runnerTypes` (undefined:
 * a runner whose types are not known). With no runner's types known, the type its default or
 * options suggest.
 */
export const describeParameters = (
  graph: JsonObject,
  placeholders: ReadonlyArray<Placeholder>,
  runnerTypes: ReadonlyArray<InputTypeIndex | undefined>
): ReadonlyArray<WorkflowParameter> => {
  const known = runnerTypes.filter((t) => t !== undefined)
  return placeholders.map((p) => {
    const inferred = inferType(p)
    const inputs = p.locations.map(({ input, node }) => {
      const def = graph[node]
      const classType = isJsonObject(def) && typeof def["class_type"] === "string" ? def["class_type"] : ""
      const use = { node_class: classType, input, inferred }
      const type = p.kind === "file" ? null : known.length === 0 ? inferred ?? null : agreed(known.map((t) => typeAt(t, use)))
      return { node, class_type: classType, input, type }
    })
    return {
      field: fieldName(p),
      placeholder: placeholderKey(p),
      kind: p.kind,
      default: p.default ?? null,
      options: p.options,
      type: agreed(inputs.map((i) => i.type ?? undefined)),
      inputs
    }
  })
}
