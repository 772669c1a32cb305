/** Register a runner: name, endpoint, tags (comma-separated) and headers (one `Name: value` a line). */
import { useState } from "preact/hooks"
import { call } from "../api.js"
import { ErrorBox } from "../ui.js"

const headersOf = (text: string): Record<string, string> | Error => {
  const out: Record<string, string> = {}
  for (const line of text.split("\n").map((l) => l.trim()).filter((l) => l !== "")) {
    const colon = line.indexOf(":")
    if (colon <= 0) return new Error(`headers: "${line}" is not "Name: value"`)
    out[line.slice(0, colon).trim()] = line.slice(colon + 1).trim()
  }
  return out
}

export const RunnerForm = ({ onCreated }: { readonly onCreated: () => void }) => {
  const [error, setError] = useState<unknown>(undefined)
  const [busy, setBusy] = useState(false)
  const submit = async (e: Event) => {
    e.preventDefault()
    const formEl = e.currentTarget as HTMLFormElement
    const data = new FormData(formEl)
    const headers = headersOf(String(data.get("headers") ?? ""))
    if (headers instanceof Error) return setError(headers)
    const tags = String(data.get("tags") ?? "").split(",").map((t) => t.trim()).filter((t) => t !== "")
    setBusy(true)
    setError(undefined)
    try {
      const payload = { name: String(data.get("name") ?? ""), endpoint: String(data.get("endpoint") ?? ""), tags, headers }
      await call((api) => api.runners.create({ payload }))
      formEl.reset()
      onCreated()
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }
  return (
    <form class="card" onSubmit={submit}>
      <h3>New runner</h3>
      <div class="field"><label for="runner-name">Name</label><input id="runner-name" name="name" required maxLength={100} /></div>
      <div class="field"><label for="runner-endpoint">Endpoint (ComfyUI base URL)</label><input id="runner-endpoint" name="endpoint" type="url" required placeholder="http://gpu-box:8188" /></div>
      <div class="field"><label for="runner-tags">Tags (comma-separated)</label><input id="runner-tags" name="tags" /></div>
      <div class="field"><label for="runner-headers">Headers (one "Name: value" a line)</label><textarea id="runner-headers" name="headers" rows={2} /></div>
      <button type="submit" class="primary" disabled={busy}>Create runner</button>
      <ErrorBox error={error} />
    </form>
  )
}
