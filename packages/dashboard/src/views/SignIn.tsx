/** Sign in with an API token: checked with `GET /v1/user`, kept in session storage. */
import { useState } from "preact/hooks"
import { call, setToken } from "../api.js"
import { ErrorBox } from "../ui.js"

export const SignIn = (props: { readonly notice: string | undefined; readonly onSignedIn: (token: string) => void }) => {
  const [value, setValue] = useState("")
  const [error, setError] = useState<unknown>(undefined)
  const [busy, setBusy] = useState(false)
  const submit = async (e: Event) => {
    e.preventDefault()
    setBusy(true)
    setError(undefined)
    const token = value.trim()
    try {
      await call((api) => api.user.get(), { token })
      setToken(token)
      props.onSignedIn(token)
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }
  return (
    <main id="main" class="signin">
      <h1>WES dashboard</h1>
      <p>Sign in with an API token (<code>wes_...</code>). It stays in this browser tab only.</p>
      {props.notice !== undefined && <p class="error" role="alert">Signed out: {props.notice}</p>}
      <form onSubmit={submit}>
        <label for="token">API token</label>
        <input id="token" type="password" autocomplete="off" required value={value} onInput={(e) => setValue(e.currentTarget.value)} />
        <button type="submit" disabled={busy}>Sign in</button>
      </form>
      <ErrorBox error={error} />
      <p><a href="/docs">API docs</a> · <a href="/v1/openapi.json">OpenAPI document</a></p>
    </main>
  )
}
