/**
 * The form for a workflow's placeholders. They are found by the server's own parser
 * (`findPlaceholders` of @wes/core), so the page reads `$text`, `$file` and `#choice` exactly as
 * the API will: text inputs, file pickers, and selects with the choice's options.
 */
import { findPlaceholders, type Placeholder, placeholderKey } from "@wes/core"
import * as Either from "effect/Either"

export { type Placeholder, placeholderKey }

/** The placeholders of a definition, or the message saying why they cannot be read. */
export const placeholdersOf = (workflow: unknown): Either.Either<ReadonlyArray<Placeholder>, string> => {
  if (typeof workflow !== "object" || workflow === null || Array.isArray(workflow)) {
    return Either.left("The file is not a JSON object (a ComfyUI API-format workflow maps node ids to nodes)")
  }
  return Either.mapLeft(findPlaceholders(workflow as Parameters<typeof findPlaceholders>[0]), (e) => e.message)
}

export const fieldOf = (p: Placeholder): string => (p.kind === "choice" ? `#${p.name}` : `$${p.name}`)

export type ParamValues = Readonly<Record<string, string | File | undefined>>

export const ParamFields = (props: {
  readonly placeholders: ReadonlyArray<Placeholder>
  readonly values: ParamValues
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
      return (
        <div class="field" key={field}>
          <label for={id}>{p.name} <span class="muted">({p.kind}{p.default !== undefined && p.kind === "text" ? `, default ${p.default}` : ""}; {where})</span></label>
          {p.kind === "file"
            ? <input id={id} type="file" required={props.filesOptional !== true} onChange={(e) => props.onChange(field, e.currentTarget.files?.[0])} />
            : p.kind === "choice" && p.options.length > 0
            ? (
              <select id={id} value={typeof value === "string" ? value : p.default} onChange={(e) => props.onChange(field, e.currentTarget.value)}>
                {p.options.map((o) => <option key={o} value={o}>{o}</option>)}
              </select>
            )
            : (
              <input id={id} type="text" required={p.default === undefined} value={typeof value === "string" ? value : ""}
                placeholder={p.default ?? ""} onInput={(e) => props.onChange(field, e.currentTarget.value)} />
            )}
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
