/**
 * Submit a workflow: drop or pick an API-format JSON file, or choose a template; the form for its
 * placeholders is rendered from the definition, each field typed as the server will convert its
 * value (described again when the tags change: they select the runners); it is sent as multipart
 * exactly like the API takes it, and the new workflow opens with live progress.
 */
import * as Result from "effect/Result"
import { useEffect, useState } from "preact/hooks"
import type { JsonObject } from "@wes/core"
import { ApiError, call } from "../api.js"
import { appendParams, definitionOf, describeParams, ParamFields, type ParamValues, type Placeholder, placeholdersOf, valuesToSend } from "../params.js"
import { navigate } from "../router.js"
import type { TemplateData } from "../types.js"
import { ErrorBox, Section, useLoad } from "../ui.js"

type Source =
  | { readonly kind: "file"; readonly file: File; readonly text: string; readonly definition: JsonObject }
  | { readonly kind: "template"; readonly template: TemplateData }

const tagList = (tags: string): ReadonlyArray<string> => tags.split(",").map((t) => t.trim()).filter((t) => t !== "")

export const Submit = (props: { readonly templateId: string | undefined }) => {
  const templates = useLoad(() => call((api) => api.templates.list({ query: { per_page: 100 } })), "templates")
  const [source, setSource] = useState<Source | undefined>(undefined)
  const [placeholders, setPlaceholders] = useState<ReadonlyArray<Placeholder>>([])
  const [values, setValues] = useState<ParamValues>({})
  const [name, setName] = useState("")
  const [tags, setTags] = useState("")
  const [error, setError] = useState<unknown>(undefined)
  const [busy, setBusy] = useState(false)
  const [dragging, setDragging] = useState(false)
  /** The tags as last committed (the field's change event), which the types are described for. */
  const [committedTags, setCommittedTags] = useState("")
  const described = useLoad(
    () =>
      source === undefined
        ? Promise.resolve(new Map())
        : describeParams({
          ...(source.kind === "file" ? { workflow_json: source.definition } : { template_id: source.template.id }),
          tags: tagList(committedTags)
        }),
    `${source?.kind === "file" ? source.text : source?.template.id}\u0000${committedTags}`
  )
  // A definition the server cannot describe is refused by create too, with the same message shown
  // on submit; until then its fields are plain text.
  const types = described.data ?? new Map()

  const use = (next: Source, definition: JsonObject, defaultName: string) => {
    const found = placeholdersOf(definition)
    if (Result.isFailure(found)) return setError(new Error(found.failure))
    setError(undefined)
    setSource(next)
    setPlaceholders(found.success)
    setValues({})
    setName((n) => (n === "" ? defaultName : n))
  }
  const pickFile = async (file: File | undefined) => {
    if (file === undefined) return
    const text = await file.text()
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch (e) {
      return setError(new Error(`${file.name} is not valid JSON (${e instanceof Error ? e.message : String(e)})`))
    }
    const definition = definitionOf(parsed)
    if (Result.isFailure(definition)) return setError(new Error(definition.failure))
    use({ kind: "file", file, text, definition: definition.success }, definition.success, file.name.replace(/\.json$/i, ""))
  }
  const pickTemplate = async (id: string) => {
    if (id === "") return setSource(undefined)
    try {
      const template = await call((api) => api.templates.get({ params: { id } }))
      use({ kind: "template", template }, template.body, template.name)
    } catch (e) {
      setError(e)
    }
  }
  useEffect(() => void (props.templateId !== undefined && pickTemplate(props.templateId)), [props.templateId])

  const submit = async (e: Event) => {
    e.preventDefault()
    if (source === undefined) return setError(new Error("Choose a workflow file or a template first"))
    const form = new FormData()
    form.append("name", name)
    if (source.kind === "file") form.append("workflow_json", new Blob([source.text], { type: "application/json" }), source.file.name)
    else form.append("template_id", source.template.id)
    if (tags.trim() !== "") form.append("tags", tags)
    appendParams(form, valuesToSend(placeholders, types, values))
    setBusy(true)
    try {
      const created = await call((api) => api.workflows.create({ payload: form }))
      navigate(`/workflows/${created.id}`)
    } catch (err) {
      setError(err instanceof ApiError ? err : new Error(String(err)))
    } finally {
      setBusy(false)
    }
  }
  return (
    <Section title="Submit a workflow">
      <div
        class={`drop${dragging ? " over" : ""}`}
        onDragOver={(e) => { e.preventDefault(); setDragging(true) }}
        onDragLeave={() => setDragging(false)}
        onDrop={(e) => { e.preventDefault(); setDragging(false); void pickFile(e.dataTransfer?.files[0]) }}
      >
        <label for="workflow-file">Workflow file (ComfyUI API format, .json): drop it here or pick it</label>
        <input id="workflow-file" type="file" accept=".json,application/json" onChange={(e) => void pickFile(e.currentTarget.files?.[0])} />
        <label for="template">or a template</label>
        <select id="template" value={source?.kind === "template" ? source.template.id : ""} onChange={(e) => void pickTemplate(e.currentTarget.value)}>
          <option value="">(none)</option>
          {(templates.data?.templates ?? []).map((t) => <option key={t.id} value={t.id}>{t.name}</option>)}
        </select>
      </div>
      <ErrorBox error={templates.error} />
      {source !== undefined && (
        <form onSubmit={submit}>
          <p>From {source.kind === "file" ? <>file <code>{source.file.name}</code></> : <>template <strong>{source.template.name}</strong></>}</p>
          <div class="field">
            <label for="wf-name">Name</label>
            <input id="wf-name" required maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} />
          </div>
          <div class="field">
            <label for="wf-tags">Tags (comma-separated, optional)</label>
            <input id="wf-tags" value={tags} onInput={(e) => setTags(e.currentTarget.value)} onChange={(e) => setCommittedTags(e.currentTarget.value)} />
          </div>
          <ParamFields placeholders={placeholders} values={values} types={types} onChange={(f, v) => setValues({ ...values, [f]: v })} />
          <button class="primary" type="submit" disabled={busy}>Submit workflow</button>
        </form>
      )}
      <ErrorBox error={error} />
    </Section>
  )
}
