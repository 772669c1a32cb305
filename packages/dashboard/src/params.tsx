/**
 * The form for a workflow's placeholders. They are found by the server's own parser
 * (`findPlaceholders` of @wes/core), so the page reads `$text`, `$file` and `#choice` exactly as
 * the API will: text inputs, file pickers, and selects with the choice's options. The type each
 * value is converted to on create comes from the server (`POST /v1/workflow/parameters`): a
 * BOOLEAN is a checkbox, an INT or FLOAT a number field with its bounds, a COMBO a select.
 */
import { findPlaceholders, isJsonObject, type JsonObject, type Placeholder, placeholderKey } from "@wes/core"
import * as Result from "effect/Result"
import { call } from "./api.js"
import type { InputTypeData } from "./types.js"

export { type Placeholder, placeholderKey }

/** A definition, or the message saying why it is not one. */
export const definitionOf = (workflow: unknown): Result.Result<JsonObject, string> =>
  isJsonObject(workflow)
    ? Result.succeed(workflow)
    : Result.fail("The file is not a JSON object (a ComfyUI API-format workflow maps node ids to nodes)")

/** The placeholders of a definition, or the message saying why they cannot be read. */
export const placeholdersOf = (workflow: JsonObject): Result.Result<ReadonlyArray<Placeholder>, string> =>
  Result.mapError(findPlaceholders(workflow), (e) => e.message)

export const fieldOf = (p: Placeholder): string => (p.kind === "choice" ? `#${p.name}` : `$${p.name}`)

export type ParamValues = Readonly<Record<string, string | File | undefined>>

/** Each form field's type as create converts it (absent or null: text). */
export type ParamTypes = ReadonlyMap<string, InputTypeData | null>

/** The server's description of a definition's parameters: the type of each form field. */
export const describeParams = async (
  payload: { readonly workflow_json?: JsonObject; readonly template_id?: string; readonly tags: ReadonlyArray<string> }
): Promise<ParamTypes> => {
  const { parameters } = await call((api) => api.workflows.parameters({ payload }))
  return new Map(parameters.map((p) => [p.field, p.type]))
}

/** How create reads a BOOLEAN (true/yes/1, any case). */
const isTrue = (value: string | undefined): boolean => value !== undefined && /^(true|yes|1)$/i.test(value.trim())

const typeLabel = (t: InputTypeData): string => {
  const range = "min" in t || "max" in t ? ` ${t.min ?? "…"} to ${t.max ?? "…"}` : ""
  return t.type === "INT" || t.type === "FLOAT" ? `${t.type}${range}` : t.type
}

/**
 * The values to send: as given, and a BOOLEAN without a value or a default sent as false (an
 * unticked box is a value too).
 */
export const valuesToSend = (placeholders: ReadonlyArray<Placeholder>, types: ParamTypes, values: ParamValues): ParamValues => {
  const unticked = placeholders.filter((p) => types.get(fieldOf(p))?.type === "BOOLEAN" && p.default === undefined)
  return { ...Object.fromEntries(unticked.map((p) => [fieldOf(p), "false"])), ...values }
}

const ValueInput = (props: {
  readonly id: string
  readonly p: Placeholder
  readonly type: InputTypeData | null | undefined
  readonly value: string | undefined
  readonly onChange: (value: string) => void
}) => {
  const { id, p, type, value } = props
  const current = value ?? p.default
  if (p.kind === "choice" && p.options.length > 0) {
    return (
      <select id={id} value={current} onChange={(e) => props.onChange(e.currentTarget.value)}>
        {p.options.map((o) => <option key={o} value={o}>{o}</option>)}
      </select>
    )
  }
  switch (type?.type) {
    case "BOOLEAN":
      return <input id={id} type="checkbox" checked={isTrue(current)} onChange={(e) => props.onChange(e.currentTarget.checked ? "true" : "false")} />
    case "COMBO":
      return (
        <select id={id} required={p.default === undefined} value={current ?? ""} onChange={(e) => props.onChange(e.currentTarget.value)}>
          {current === undefined && <option value="">(choose)</option>}
          {type.options.map((o) => <option key={String(o)} value={String(o)}>{String(o)}</option>)}
        </select>
      )
    case "INT":
    case "FLOAT":
      return (
        <input id={id} type="number" required={p.default === undefined} min={type.min} max={type.max}
          step={type.type === "FLOAT" ? "any" : "step" in type && type.step !== undefined && type.step > 1 ? type.step : 1}
          value={value ?? ""} placeholder={p.default ?? ""} onInput={(e) => props.onChange(e.currentTarget.value)} />
      )
    default:
      return (
        <input id={id} type="text" required={p.default === undefined} value={value ?? ""}
          placeholder={p.default ?? ""} onInput={(e) => props.onChange(e.currentTarget.value)} />
      )
  }
}

export const ParamFields = (props: {
  readonly placeholders: ReadonlyArray<Placeholder>
  readonly values: ParamValues
  readonly types: ParamTypes
  readonly onChange: (field: string, value: string | File | undefined) => void
  /** Files are optional (a rerun keeps the original's while it is unfinished). */
  readonly filesOptional?: boolean
}) => (
  <fieldset>
    <legend>Parameters</legend>
    {props.placeholders.length === 0 && <p class="muted">This workflow has no placeholders.</p>}
    {props.placeholders.map((p) => {
      const field = fieldOf(p)
      const id = `param-${p.kind}-${p.name}`
      const where = p.locations.map((l) => `node ${l.node}.${l.input}`).join(", ")
      const value = props.values[field]
      const type = props.types.get(field)
      return (
        <div class="field" key={field}>
          <label for={id}>
            {p.name}{" "}
            <span class="muted">
              ({p.kind}{type ? `, ${typeLabel(type)}` : ""}{p.default !== undefined && p.kind === "text" ? `, default ${p.default}` : ""}; {where})
            </span>
          </label>
          {p.kind === "file"
            ? <input id={id} type="file" required={props.filesOptional !== true} onChange={(e) => props.onChange(field, e.currentTarget.files?.[0])} />
            : <ValueInput id={id} p={p} type={type} value={typeof value === "string" ? value : undefined} onChange={(v) => props.onChange(field, v)} />}
        </div>
      )
    })}
  </fieldset>
)

/** Appends the parameter fields that have a value (an empty text keeps its default). */
export const appendParams = (form: FormData, values: ParamValues): void => {
  for (const [field, value] of Object.entries(values)) {
    if (value === undefined || value === "") continue
    if (typeof value === "string") form.append(field, value)
    else form.append(field, value, value.name)
  }
}
