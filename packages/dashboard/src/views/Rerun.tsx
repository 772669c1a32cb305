/** Rerun: the same definition with new parameter values (only the changed ones are sent), each field typed as create converts it. */
import * as Result from "effect/Result"
import { useState } from "preact/hooks"
import { call } from "../api.js"
import { appendParams, describeParams, fieldOf, ParamFields, type ParamValues, placeholderKey, placeholdersOf } from "../params.js"
import { navigate } from "../router.js"
import type { WorkflowDetailData } from "../types.js"
import { ErrorBox, useLoad } from "../ui.js"

export const Rerun = ({ workflow, finished }: { readonly workflow: WorkflowDetailData; readonly finished: boolean }) => {
  const found = placeholdersOf(workflow.workflow_json)
  const placeholders = Result.getOrElse(found, () => [])
  const used = new Map(workflow.workflow_params.map(([key, value]) => [key, value]))
  const initial: ParamValues = Object.fromEntries(placeholders.flatMap((p) =>
    p.kind === "file" ? [] : [[fieldOf(p), used.get(placeholderKey(p)) ?? ""]]
  ))
  const [values, setValues] = useState<ParamValues>(initial)
  const [error, setError] = useState<unknown>(undefined)
  const [busy, setBusy] = useState(false)
  const described = useLoad(() => describeParams({ workflow_json: workflow.workflow_json, tags: workflow.tags }), workflow.id)
  const submit = async (e: Event) => {
    e.preventDefault()
    const changed = Object.fromEntries(Object.entries(values).filter(([field, value]) => value !== initial[field]))
    const form = new FormData()
    appendParams(form, changed)
    setBusy(true)
    setError(undefined)
    try {
      const created = await call((api) => api.workflows.rerun({ params: { id: workflow.id }, payload: form }))
      navigate(`/workflows/${created.id}`)
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }
  return (
    <form class="rerun" onSubmit={submit}>
      <p class="muted">
        A new workflow with the same definition, name and tags; parameters left as they are keep this workflow's values
        {finished && placeholders.some((p) => p.kind === "file") ? " (files must be picked again: the uploads were deleted when it finished)" : ""}.
      </p>
      <ParamFields placeholders={placeholders} values={values} types={described.data ?? new Map()} filesOptional={!finished}
        onChange={(f, v) => setValues({ ...values, [f]: v })} />
      <ErrorBox error={described.error} />
      <button type="submit" disabled={busy}>Rerun</button>
      <ErrorBox error={error} />
    </form>
  )
}
