/** Templates: list, create from a JSON file, delete (asked twice), and submit from one. */
import { useState } from "preact/hooks"
import { call } from "../api.js"
import { ErrorBox, Pager, Section, Time, useLoad } from "../ui.js"

const PER_PAGE = 20

export const Templates = () => {
  const [page, setPage] = useState(1)
  const list = useLoad(() => call((api) => api.templates.list({ query: { page, per_page: PER_PAGE } })), `${page}`)
  const [confirming, setConfirming] = useState<string | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)
  const [busy, setBusy] = useState(false)
  const remove = async (id: string) => {
    setError(undefined)
    try {
      await call((api) => api.templates.delete({ params: { id } }))
      setConfirming(undefined)
      list.reload()
    } catch (e) {
      setError(e)
    }
  }
  const create = async (e: Event) => {
    e.preventDefault()
    const formEl = e.currentTarget as HTMLFormElement
    setBusy(true)
    setError(undefined)
    try {
      const payload = new FormData(formEl)
      await call((api) => api.templates.create({ payload }))
      formEl.reset()
      list.reload()
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }
  const templates = list.data?.templates ?? []
  return (
    <Section title="Templates">
      <ErrorBox error={list.error} />
      {list.data !== undefined && templates.length === 0 && <p>No templates yet.</p>}
      {templates.length > 0 && (
        <table class="list">
          <thead><tr><th scope="col">Name</th><th scope="col">Description</th><th scope="col">Updated</th><th scope="col">Actions</th></tr></thead>
          <tbody>
            {templates.map((t) => (
              <tr key={t.id}>
                <td data-label="Name">{t.name}</td>
                <td data-label="Description">{t.description}</td>
                <td data-label="Updated"><Time at={t.updated_at} /></td>
                <td data-label="Actions" class="actions">
                  <a class="button" href={`#/submit?template=${t.id}`}>Submit</a>
                  {confirming === t.id
                    ? <button type="button" class="danger" onClick={() => void remove(t.id)}>Confirm delete {t.name}</button>
                    : <button type="button" onClick={() => setConfirming(t.id)} aria-label={`Delete template ${t.name}`}>Delete</button>}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {list.data !== undefined && <Pager page={page} perPage={PER_PAGE} total={list.data.total} onPage={setPage} />}
      <form class="card" onSubmit={create}>
        <h3>New template</h3>
        <div class="field"><label for="tpl-name">Name</label><input id="tpl-name" name="name" required maxLength={100} /></div>
        <div class="field"><label for="tpl-description">Description</label><input id="tpl-description" name="description" required maxLength={500} /></div>
        <div class="field"><label for="tpl-body">Workflow file (API-format JSON)</label><input id="tpl-body" name="body" type="file" accept=".json,application/json" required /></div>
        <button type="submit" class="primary" disabled={busy}>Create template</button>
      </form>
      <ErrorBox error={error} />
    </Section>
  )
}
