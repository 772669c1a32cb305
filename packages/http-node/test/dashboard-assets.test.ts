/**
 * `wes serve` serves the dashboard's built files at `/` and `/ui/...` (same origin, no CDN), and
 * they stay outside the /v1 contract: the OpenAPI document does not list them.
 */
import { execFileSync } from "node:child_process"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startServer, type TestServer } from "./harness.js"

let server: TestServer

beforeAll(async () => {
  // What `pnpm build` does for the dashboard (a few hundred milliseconds): the files served are current.
  execFileSync(process.execPath, [path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../dashboard/build.mjs")], { stdio: "pipe" })
  server = await startServer()
})
afterAll(() => server.close())

describe("dashboard assets", () => {
  it("answers / with the page, under a same-origin content security policy", async () => {
    const res = await server.fetch("/")
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8")
    expect(res.headers.get("content-security-policy")).toContain("default-src 'self'")
    const html = await res.text()
    expect(html).toContain('<script type="module" src="/ui/app.js"></script>')
  })

  it("serves the page's script and style from /ui/ and answers other /ui/ paths with the JSON 404", async () => {
    const js = await server.fetch("/ui/app.js")
    expect([js.status, js.headers.get("content-type")]).toEqual([200, "text/javascript; charset=utf-8"])
    expect((await js.arrayBuffer()).byteLength).toBeGreaterThan(1000)
    const css = await server.fetch("/ui/app.css")
    expect([css.status, css.headers.get("content-type")]).toEqual([200, "text/css; charset=utf-8"])
    const missing = await server.fetch("/ui/../package.json")
    expect([missing.status, await missing.json()]).toEqual([404, { status: 404, message: "Not found" }])
    const other = await server.fetch("/ui/nothing.js")
    expect([other.status, await other.json()]).toEqual([404, { status: 404, message: "Not found" }])
  })

  it("adds nothing to the API's description", async () => {
    const spec = (await (await server.fetch("/v1/openapi.json")).json()) as { paths: Record<string, unknown> }
    expect(Object.keys(spec.paths).filter((p) => p === "/" || p.startsWith("/ui"))).toEqual([])
  })
})
