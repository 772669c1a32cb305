/** Small shared pieces: errors, status badges, times, paging, async state. */
import * as DateTime from "effect/DateTime"
import type { ComponentChildren } from "preact"
import { useCallback, useEffect, useState } from "preact/hooks"
import { ApiError } from "./api.js"

export const ErrorBox = ({ error }: { readonly error: unknown }) => {
  if (error === undefined || error === null) return null
  const message = error instanceof Error ? error.message : String(error)
  const details = error instanceof ApiError ? error.details : []
  return (
    <div class="error" role="alert">
      <strong>{error instanceof ApiError && error.status > 0 ? `${error.status}: ` : ""}{message}</strong>
      {details.length > 1 && <ul>{details.map((d) => <li key={d.field}><code>{d.field}</code> {d.message}</li>)}</ul>}
    </div>
  )
}

export const StatusBadge = ({ status }: { readonly status: string }) => <span class={`badge s-${status}`}>{status}</span>

export const Time = ({ at }: { readonly at: DateTime.Utc | null | undefined }) => {
  if (at === null || at === undefined) return <span class="muted">-</span>
  const iso = DateTime.formatIso(at)
  return <time dateTime={iso} title={iso}>{DateTime.toDate(at).toLocaleString()}</time>
}

export const Tags = ({ tags }: { readonly tags: ReadonlyArray<string> }) =>
  tags.length === 0 ? <span class="muted">none</span> : <span>{tags.map((t) => <span class="tag" key={t}>{t}</span>)}</span>

export const Pager = (props: { readonly page: number; readonly perPage: number; readonly total: number; readonly onPage: (p: number) => void }) => {
  const pages = Math.max(1, Math.ceil(props.total / props.perPage))
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled={props.page <= 1} onClick={() => props.onPage(props.page - 1)}>Previous</button>
      <span>Page {props.page} of {pages} ({props.total} in all)</span>
      <button type="button" disabled={props.page >= pages} onClick={() => props.onPage(props.page + 1)}>Next</button>
    </nav>
  )
}

export const Section = (props: { readonly title: string; readonly children: ComponentChildren }) => (
  <section aria-label={props.title}><h2>{props.title}</h2>{props.children}</section>
)

/** Loads `load()` when `key` changes; `reload` fetches again. */
export const useLoad = <T,>(load: () => Promise<T>, key: string) => {
  const [state, setState] = useState<{ readonly data?: T; readonly error?: unknown; readonly loading: boolean }>({ loading: true })
  const [n, setN] = useState(0)
  useEffect(() => {
    let live = true
    setState((s) => ({ ...s, loading: true }))
    load().then(
      (data) => live && setState({ data, loading: false }),
      (error: unknown) => live && setState({ error, loading: false })
    )
    return () => {
      live = false
    }
  }, [key, n])
  const reload = useCallback(() => setN((x) => x + 1), [])
  return { ...state, reload }
}
