/**
 * The dashboard (@wes/dashboard): its built page at `/` and its assets at `/ui/<file>`. Static
 * files only, read once at startup from the package's `dist`; the page is a client of /v1 and adds
 * no route to the API's declaration. Unbuilt (a checkout before `pnpm build`), `/` says so.
 */
import * as Effect from "effect/Effect"
import { HttpServerRequest } from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import { readdirSync, readFileSync } from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import type { PlainRoute } from "./Edge.js"

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png"
}

/** Same origin only; output previews are shown from blob: URLs. */
const HEADERS = {
  "cache-control": "no-cache",
  "x-content-type-options": "nosniff",
  "content-security-policy":
    "default-src 'self'; img-src 'self' blob: data:; script-src 'self'; style-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'"
}

interface Asset {
  readonly body: Uint8Array
  readonly type: string
}

/**
 * The built files by URL path (`/`, `/ui/app.js`, ...), or why there are none (the package or its
 * `dist` is missing: the dashboard is not built).
 */
export const loadDashboard = (): { readonly assets: ReadonlyMap<string, Asset>; readonly missing?: string } => {
  const assets = new Map<string, Asset>()
  try {
    const dist = path.join(path.dirname(createRequire(import.meta.url).resolve("@wes/dashboard/package.json")), "dist")
    assets.set("/", { body: readFileSync(path.join(dist, "index.html")), type: TYPES[".html"]! })
    for (const name of readdirSync(path.join(dist, "ui"))) {
      const type = TYPES[path.extname(name)]
      if (type !== undefined) assets.set(`/ui/${name}`, { body: readFileSync(path.join(dist, "ui", name)), type })
    }
    return { assets }
  } catch (e) {
    return { assets: new Map(), missing: e instanceof Error ? e.message : String(e) }
  }
}

const notBuilt = HttpServerResponse.jsonUnsafe(
  { status: 404, message: "The dashboard is not built: run pnpm build (it builds packages/dashboard)" },
  { status: 404 }
)
const notFound = HttpServerResponse.jsonUnsafe({ status: 404, message: "Not found" }, { status: 404 })

/** `GET /` and `GET /ui/*`. */
export const dashboardRoutes: Effect.Effect<ReadonlyArray<PlainRoute>> = Effect.gen(function*() {
  const { assets, missing } = loadDashboard()
  if (missing !== undefined) yield* Effect.logWarning("dashboard not built: / answers 404 until `pnpm build`", { reason: missing })
  const handler = Effect.map(HttpServerRequest, (request) => {
    const asset = assets.get(request.url.split("?")[0]!)
    if (asset === undefined) return assets.size === 0 ? notBuilt : notFound
    return HttpServerResponse.uint8Array(asset.body, { contentType: asset.type, headers: HEADERS })
  })
  return [{ path: "/", handler }, { path: "/ui/*", handler }]
})
