/**
 * The workflow list: newest first, filtered by status and tag, paged. Live: the API has no
 * user-wide event stream, so the list follows ONE stream, that of the oldest unfinished workflow
 * on the page (the one a runner is working on), and fetches the page again when it reports a
 * status change (at most once a second). When it ends, the next unfinished one is followed.
 */
import { useEffect, useRef, useState } from "preact/hooks"
import { call } from "../api.js"
import { navigate } from "../router.js"
import { follow } from "../sse.js"
import { isFinished, type Status, WorkflowStatus } from "../types.js"
import { ErrorBox, Pager, Section, StatusBadge, Tags, Time, useLoad } from "../ui.js"

const PAGE_SIZES = [10, 20, 50, 100]

/** The status a filter's option names ("": all). */
const statusOf = (value: string): Status | undefined => WorkflowStatus.literals.find((s) => s === value)

interface Filters {
  readonly page: number
  readonly perPage: number
  readonly status: Status | undefined
  readonly tag: string
}

export const Workflows = () => {
  const [filters, setFilters] = useState<Filters>({ page: 1, perPage: 20, status: undefined, tag: "" })
  const [tagInput, setTagInput] = useState("")
  const list = useLoad(
    () =>
      call((api) =>
        api.workflows.list({
          query: { page: filters.page, per_page: filters.perPage, status: filters.status, tag: filters.tag === "" ? undefined : filters.tag }
        })
      ),
    JSON.stringify(filters)
  )
  const workflows = list.data?.workflows ?? []
  const followed = [...workflows].reverse().find((w) => !isFinished(w.status))?.id
  const lastRefresh = useRef(0)
  const reload = useRef(list.reload)
  reload.current = list.reload
  useEffect(() => {
    if (followed === undefined) return
    let timer: ReturnType<typeof setTimeout> | undefined
    let first = true
    const stop = follow(followed, {
      onEvent: (e) => {
        // The first event is the state just fetched; later status events mean the page changed.
        if (first || (e.type !== "status" && e.type !== "done")) return void (first = false)
        if (timer !== undefined) return
        timer = setTimeout(() => {
          timer = undefined
          lastRefresh.current = Date.now()
          reload.current()
        }, Math.max(0, lastRefresh.current + 1000 - Date.now()))
      }
    })
    return () => {
      stop()
      if (timer !== undefined) clearTimeout(timer)
    }
  }, [followed])
  return (
    <Section title="Workflows">
      <form class="filters" onSubmit={(e) => { e.preventDefault(); setFilters({ ...filters, page: 1, tag: tagInput.trim() }) }}>
        <label>
          Status{" "}
          <select value={filters.status ?? ""} onChange={(e) => setFilters({ ...filters, page: 1, status: statusOf(e.currentTarget.value) })}>
            <option value="">all</option>
            {WorkflowStatus.literals.map((s) => <option key={s} value={s}>{s}</option>)}
          </select>
        </label>
        <label>
          Tag <input value={tagInput} onInput={(e) => setTagInput(e.currentTarget.value)} placeholder="any" />
        </label>
        <label>
          Per page{" "}
          <select value={filters.perPage} onChange={(e) => setFilters({ ...filters, page: 1, perPage: Number(e.currentTarget.value) })}>
            {PAGE_SIZES.map((n) => <option key={n} value={n}>{n}</option>)}
          </select>
        </label>
        <button type="submit">Filter</button>
        <button type="button" onClick={list.reload}>Refresh</button>
        <a class="button primary" href="#/submit">New workflow</a>
      </form>
      <ErrorBox error={list.error} />
      {list.data !== undefined && workflows.length === 0 && <p>No workflows{filters.status !== undefined || filters.tag !== "" ? " match these filters" : " yet"}.</p>}
      {workflows.length > 0 && (
        <table class="list" aria-busy={list.loading}>
          <thead><tr><th scope="col">Name</th><th scope="col">Status</th><th scope="col">Tags</th><th scope="col">Created</th><th scope="col">Finished</th></tr></thead>
          <tbody>
            {workflows.map((w) => (
              <tr key={w.id} data-id={w.id} onClick={(e) => (e.target as HTMLElement).tagName !== "A" && navigate(`/workflows/${w.id}`)}>
                <td data-label="Name"><a href={`#/workflows/${w.id}`}>{w.name}</a></td>
                <td data-label="Status"><StatusBadge status={w.status} /></td>
                <td data-label="Tags"><Tags tags={w.tags} /></td>
                <td data-label="Created"><Time at={w.created_at} /></td>
                <td data-label="Finished"><Time at={w.completed_at} /></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {list.data !== undefined && (
        <Pager page={filters.page} perPage={filters.perPage} total={list.data.total} onPage={(page) => setFilters({ ...filters, page })} />
      )}
    </Section>
  )
}
