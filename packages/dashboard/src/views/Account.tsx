/** The caller's tier, its limits and the current usage (`GET /v1/user`). */
import { call } from "../api.js"
import type { CurrentUserData } from "../types.js"
import { ErrorBox, Section, Time, useLoad } from "../ui.js"

const ROWS: ReadonlyArray<readonly [string, keyof CurrentUserData["limits"], keyof CurrentUserData["usage"] | undefined]> = [
  ["Unfinished workflows", "active_workflows", "active_workflows"],
  ["Workflows created today (UTC)", "workflows_per_day", "workflows_today"],
  ["Templates", "templates", "templates"],
  ["Runners", "runners", "runners"],
  ["Parameters per workflow", "workflow_params", undefined]
]

export const Account = () => {
  const user = useLoad(() => call((api) => api.user.get()), "user")
  return (
    <Section title="Account">
      <ErrorBox error={user.error} />
      {user.data !== undefined && (
        <>
          <p>
            {user.data.email ?? "(no email)"} · tier <strong>{user.data.tier}</strong> · since <Time at={user.data.created_at} />
          </p>
          <table>
            <thead><tr><th scope="col">Limit</th><th scope="col">Used</th><th scope="col">Allowed</th></tr></thead>
            <tbody>
              {ROWS.map(([label, limit, usage]) => {
                const used = usage === undefined ? undefined : user.data!.usage[usage]
                const max = user.data!.limits[limit]
                return (
                  <tr key={limit}>
                    <th scope="row">{label}</th>
                    <td>{used === undefined ? "per workflow" : <><meter min={0} max={max} value={used} aria-label={`${label} used`} /> {used}</>}</td>
                    <td>{max}</td>
                  </tr>
                )
              })}
            </tbody>
          </table>
        </>
      )}
    </Section>
  )
}
