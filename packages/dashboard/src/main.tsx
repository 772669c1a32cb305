/** The dashboard's shell: sign-in gate, navigation, and the view the hash names. */
import { render } from "preact"
import { useEffect, useState } from "preact/hooks"
import { clearToken, getToken, setUnauthorizedHandler } from "./api.js"
import { useRoute } from "./router.js"
import { Account } from "./views/Account.js"
import { Runners } from "./views/Runners.js"
import { SignIn } from "./views/SignIn.js"
import { Submit } from "./views/Submit.js"
import { Templates } from "./views/Templates.js"
import { WorkflowDetailView } from "./views/WorkflowDetail.js"
import { Workflows } from "./views/Workflows.js"

const NAV: ReadonlyArray<readonly [string, string]> = [
  ["workflows", "Workflows"],
  ["submit", "Submit"],
  ["templates", "Templates"],
  ["runners", "Runners"],
  ["account", "Account"]
]

const App = () => {
  const [token, setTokenState] = useState(getToken)
  const [notice, setNotice] = useState<string | undefined>(undefined)
  const route = useRoute()
  useEffect(() => setUnauthorizedHandler((message) => {
    clearToken()
    setNotice(message)
    setTokenState(null)
  }), [])
  if (token === null) return <SignIn notice={notice} onSignedIn={(t) => { setNotice(undefined); setTokenState(t) }} />
  const [view = "workflows", id] = route.parts
  const signOut = () => {
    clearToken()
    setTokenState(null)
  }
  return (
    <>
      <a class="skip" href="#main">Skip to content</a>
      <header>
        <span class="brand">WES</span>
        <nav aria-label="Main">
          {NAV.map(([key, label]) => (
            <a key={key} href={`#/${key}`} aria-current={view === key ? "page" : undefined}>{label}</a>
          ))}
        </nav>
        <span class="links">
          <a href="/docs">API docs</a>
          <a href="/v1/openapi.json">OpenAPI</a>
          <button type="button" onClick={signOut}>Sign out</button>
        </span>
      </header>
      <main id="main">
        {view === "workflows" && id !== undefined
          ? <WorkflowDetailView key={id} id={id} />
          : view === "submit"
          ? <Submit templateId={route.params.get("template") ?? undefined} />
          : view === "templates"
          ? <Templates />
          : view === "runners"
          ? <Runners />
          : view === "account"
          ? <Account />
          : <Workflows />}
      </main>
    </>
  )
}

render(<App />, document.getElementById("app")!)
