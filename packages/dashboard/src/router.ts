/** Hash routes (`#/workflows/<id>`): the server serves one page at `/`, the views live in the hash. */
import { useEffect, useState } from "preact/hooks"

export interface Route {
  /** Path segments after `#/`, e.g. ["workflows", "<id>"]. */
  readonly parts: ReadonlyArray<string>
  readonly params: URLSearchParams
}

const current = (): Route => {
  const hash = location.hash.replace(/^#\/?/, "")
  const [path = "", search = ""] = hash.split("?")
  return { parts: path.split("/").filter((p) => p !== "").map(decodeURIComponent), params: new URLSearchParams(search) }
}

export const useRoute = (): Route => {
  const [route, setRoute] = useState(current)
  useEffect(() => {
    const update = () => setRoute(current())
    addEventListener("hashchange", update)
    return () => removeEventListener("hashchange", update)
  }, [])
  return route
}

export const navigate = (to: string): void => {
  location.hash = to
}
