/**
 * What the server reads from the declaration about its routes, beyond what HttpApiBuilder does
 * with it: which methods a path is served with (405 with `Allow`, rather than 404) and how each
 * route's body is encoded (NodeRequest reads it so).
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as Option from "effect/Option"
import { WesApi } from "./Api.js"
import type { PayloadKind } from "./NodeRequest.js"

interface Route {
  readonly method: string
  readonly pattern: RegExp
  readonly payload: PayloadKind | undefined
  readonly key: string
}

const routes: ReadonlyArray<Route> = (() => {
  const out: Array<Route> = []
  HttpApi.reflect(WesApi, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => {
      const source = endpoint.path.split("/").map((s) => (s.startsWith(":") ? "[^/]+" : s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))).join("/")
      const payload = Option.match(endpoint.payloadSchema, {
        onNone: () => undefined,
        onSome: (schema): PayloadKind => (HttpApiSchema.getMultipart(schema.ast) === undefined ? "json" : "multipart")
      })
      out.push({ method: endpoint.method, pattern: new RegExp(`^${source}/?$`), payload, key: `${endpoint.method} ${endpoint.path}` })
    }
  })
  return out
})()

const payloads = new Map(routes.flatMap((r) => (r.payload === undefined ? [] : [[r.key, r.payload] as const])))

/** Methods a path is served with (empty when the path is unknown). */
export const allowedMethods = (url: string): ReadonlyArray<string> => {
  const path = url.split("?")[0]!
  return [...new Set(routes.filter((r) => r.pattern.test(path)).map((r) => r.method))]
}

/** The declared encoding of a route's body (`method` and path pattern as routed), if it has one. */
export const payloadKind = (method: string, path: string): PayloadKind | undefined => payloads.get(`${method} ${path}`)

/** The declared path a request was routed to (`/v1/workflow/:id`), for metrics; `other` when none. */
export const routeOf = (url: string): string => {
  const path = url.split("?")[0]!
  if (path === "/metrics" || path === "/docs") return path
  const route = routes.find((r) => r.pattern.test(path))
  return route === undefined ? "other" : route.key.slice(route.key.indexOf(" ") + 1)
}
