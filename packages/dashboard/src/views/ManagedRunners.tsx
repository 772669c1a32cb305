/** The operator's managed runners the caller's tier may use (pro and plus), read-only. */
import { ApiError, call } from "../api.js"
import { ErrorBox, StatusBadge, Tags, useLoad } from "../ui.js"

export const ManagedRunners = () => {
  const list = useLoad(() => call((api) => api.managedRunners.list({ query: { per_page: 100 } })), "managed")
  const forbidden = list.error instanceof ApiError && list.error.status === 403
  return (
    <section aria-label="Managed runners">
      <h3>Managed runners</h3>
      {forbidden ? <p class="muted">{(list.error as ApiError).message}.</p> : <ErrorBox error={list.error} />}
      {list.data !== undefined && list.data.runners.length === 0 && <p class="muted">No managed runners are offered to your tier at the moment.</p>}
      {list.data !== undefined && list.data.runners.length > 0 && (
        <table>
          <thead><tr><th scope="col">Name</th><th scope="col">Type</th><th scope="col">Status</th><th scope="col">Tags</th></tr></thead>
          <tbody>
            {list.data.runners.map((r) => (
              <tr key={r.id}><td>{r.name}</td><td>{r.runner_type}</td><td><StatusBadge status={r.status} /></td><td><Tags tags={r.tags} /></td></tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  )
}
