/**
 * Inputs by URL (issue 33, item 3): a `$file` parameter sent as a URL text is fetched once at
 * create time through the guarded fetch and reaches the runner's /upload/image byte for byte;
 * a rerun reuses the stored input; every failure is a 400 naming the parameter, the URL and the
 * reason (private address, also after a redirect or a rebinding DNS answer; too large; no answer
 * in time; non-2xx; too many redirects; http:// where refused; not enabled), never a hang.
 */
import { FakeComfyUI, saveImageWorkflow, solidPng, standInDenied, type TwoAddressServer, twoAddressServer } from "@wes/runner-client/testing"
import { InputFetcher } from "@wes/core"
import * as Effect from "effect/Effect"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { inputFetcherNode } from "../src/InputFetcherNode.js"
import {
  type ErrorBody,
  fastDispatch,
  json,
  readJson,
  startServer,
  type TestServer,
  type WorkflowDetailJson,
  workflowForm,
  type WorkflowSummaryJson
} from "./harness.js"
import { poll } from "./polling.js"

const MB = 1024 * 1024
const png = new Uint8Array(solidPng(8, 8, 0x00ff00))
const big = new Uint8Array(MB + 1).fill(9)
const wf = { ...saveImageWorkflow(), "1": { class_type: "LoadImage", inputs: { image: "$file(photo)" } } }

let files: TwoAddressServer
let server: TestServer
const fakes: Array<FakeComfyUI> = []
/** Answers of the test's DNS: `files.test` is the stand-in public address, `inside.test` private, `rebind.test` public once, then private. */
let rebindCalls = 0
const resolve = (host: string) =>
  host === "files.test" ? Promise.resolve(["127.0.0.2"])
  : host === "inside.test" ? Promise.resolve(["127.0.0.1"])
  : host === "rebind.test" ? Promise.resolve([rebindCalls++ === 0 ? "127.0.0.2" : "127.0.0.1"])
  : Promise.reject(new Error("ENOTFOUND"))

beforeAll(async () => {
  files = await twoAddressServer((req, res) => {
    const path = req.url ?? "/"
    if (path === "/cat.png") return void res.writeHead(200, { "content-type": "image/png" }).end(png)
    if (path.startsWith("/download")) {
      return void res.writeHead(200, { "content-type": "image/png; charset=binary", "content-disposition": "attachment; filename=\"dog.png\"" }).end(png)
    }
    if (path === "/big") return void res.writeHead(200, { "content-length": String(big.length) }).end(big)
    // No Content-Length: the limit is found while the body streams.
    if (path === "/big-chunked") {
      res.writeHead(200, { "content-type": "application/octet-stream" })
      res.write(big.subarray(0, MB / 2))
      return void res.end(big.subarray(MB / 2))
    }
    if (path === "/to-inside") return void res.writeHead(302, { location: `http://inside.test:${files.port}/cat.png` }).end()
    if (path === "/to-literal") return void res.writeHead(301, { location: `http://127.0.0.1:${files.port}/cat.png` }).end()
    if (path === "/to-cat") return void res.writeHead(307, { location: "/cat.png" }).end()
    if (path === "/loop") return void res.writeHead(302, { location: "/loop" }).end()
    if (path === "/hang") return // never answers
    res.writeHead(404).end("no")
  })
  server = await startServer({
    dispatcher: fastDispatch,
    tiers: { pro: { active_workflows: 500, max_upload_bytes: MB } },
    // Tests allow http:// (no certificates); the address policy stays on, with 127.0.0.2 standing in for a public address.
    inputFetcher: inputFetcherNode({ timeout: "300 millis", maxTime: "5 seconds", allowPrivate: false, allowHttp: true, resolve, denied: standInDenied })
  })
})
afterAll(async () => {
  await server.close()
  await files.close()
})
afterEach(async () => {
  await Promise.all(fakes.splice(0).map((f) => f.close()))
})

type User = Awaited<ReturnType<TestServer["user"]>>

const withRunner = async (u: User) => {
  const f = await FakeComfyUI.start()
  fakes.push(f)
  expect((await server.fetch("/v1/runner", json({ name: "r", endpoint: f.url }, u.auth))).status).toBe(201)
  return f
}

const create = (u: User, fields: Parameters<typeof workflowForm>[0], workflow: unknown = wf, on = server) =>
  on.fetch("/v1/workflow", { method: "POST", headers: u.auth, body: workflowForm({ name: "url", ...fields }, workflow) })

const untilDone = (u: User, id: string) =>
  poll(() => `workflow ${id} to end`, async () => {
    const w = await readJson<WorkflowDetailJson>(await server.fetch(`/v1/workflow/${id}`, { headers: u.auth }))
    return ["completed", "failed", "invalid", "cancelled"].includes(w.status) ? w : undefined
  })

/** The bytes the runner received as `upload`. */
const received = async (f: FakeComfyUI, name: string) => {
  const upload = f.uploads.find((up) => up.name?.endsWith(name))!
  const res = await fetch(`${f.url}/view?filename=${encodeURIComponent(upload.name!)}&subfolder=${upload.subfolder}&type=input`)
  return new Uint8Array(await res.arrayBuffer())
}

/** A create that must be refused: its 400's message. */
const refusal = async (u: User, url: string) => {
  const before = files.privateHits()
  const res = await create(u, { $photo: url })
  const body = await readJson<ErrorBody>(res)
  expect([res.status, body.details?.[0]?.field]).toEqual([400, "$photo"])
  expect(body.message).toContain(url)
  expect(files.privateHits()).toBe(before)
  return body.message
}

describe("inputs by URL", () => {
  it("a URL input is fetched once and reaches the runner's /upload/image byte for byte, named from the URL or Content-Disposition", async () => {
    const u = await server.user("pro")
    const f = await withRunner(u)
    const two = { ...wf, "5": { class_type: "LoadImage", inputs: { image: "$file(other)" } } }
    const hits = files.publicHits()
    const res = await create(u, { $photo: `http://files.test:${files.port}/cat.png`, $other: `http://files.test:${files.port}/download?id=7` }, two)
    expect(res.status).toBe(201)
    const w = await readJson<WorkflowSummaryJson>(res)
    expect((await untilDone(u, w.id)).status).toBe("completed")
    expect(Buffer.compare(await received(f, "cat.png"), png)).toBe(0)
    expect(Buffer.compare(await received(f, "dog.png"), png)).toBe(0)
    expect(files.publicHits() - hits).toBe(2)
  })

  it("a rerun reuses the stored input: no second fetch", async () => {
    const u = await server.user("pro")
    const f = await withRunner(u)
    f.hold()
    const first = await readJson<WorkflowSummaryJson>(await create(u, { $photo: `http://files.test:${files.port}/to-cat` }))
    const hits = files.publicHits()
    const rerun = await server.fetch(`/v1/workflow/${first.id}/rerun`, { method: "POST", headers: u.auth, body: new FormData() })
    expect(rerun.status).toBe(201)
    expect(files.publicHits()).toBe(hits)
    f.release()
    const again = await readJson<WorkflowSummaryJson>(rerun)
    expect((await untilDone(u, again.id)).status).toBe("completed")
    expect(Buffer.compare(await received(f, "cat.png"), png)).toBe(0)
  })

  it("a URL input over the tier's max_upload_bytes is a 400 naming the limit, declared or found while streaming", async () => {
    const u = await server.user("pro")
    await withRunner(u)
    for (const path of ["/big", "/big-chunked"]) {
      expect(await refusal(u, `http://files.test:${files.port}${path}`)).toContain("pro tier's limit of 1 MB per request (max_upload_bytes")
    }
  })

  it("refuses private addresses: a literal, a redirect to a private name or literal, a name that answers public first and private next", async () => {
    const u = await server.user("pro")
    await withRunner(u)
    expect(await refusal(u, `http://127.0.0.1:${files.port}/cat.png`)).toContain("WES_INPUT_URL_ALLOW_PRIVATE=true")
    expect(await refusal(u, `http://files.test:${files.port}/to-inside`)).toContain("input URL host inside.test is on a private")
    expect(await refusal(u, `http://files.test:${files.port}/to-literal`)).toContain("WES_INPUT_URL_ALLOW_PRIVATE=true")
    rebindCalls = 0
    expect((await create(u, { $photo: `http://rebind.test:${files.port}/cat.png` })).status).toBe(201)
    expect(await refusal(u, `http://rebind.test:${files.port}/cat.png`)).toContain("input URL host rebind.test is on a private")
    expect(rebindCalls).toBe(2)
    expect(files.privateHits()).toBe(0)
  })

  it("a server that never answers ends in a 400 after the timeout; so do non-2xx answers and redirect loops", async () => {
    const u = await server.user("pro")
    await withRunner(u)
    expect(await refusal(u, `http://files.test:${files.port}/hang`)).toContain("no answer within 300ms")
    expect(await refusal(u, `http://files.test:${files.port}/nothing-here`)).toContain("the server answered HTTP 404")
    expect(await refusal(u, `http://files.test:${files.port}/loop`)).toContain("more than 5 redirects")
    expect(await refusal(u, "http://nowhere.test/x.png")).toContain("could not be resolved")
  })

  it("refuses http:// unless allowed, and says so when the server fetches no URL inputs", async () => {
    const strict = inputFetcherNode({ timeout: "1 second", maxTime: "1 second", allowPrivate: false, allowHttp: false })
    const failure = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const fetcher = yield* InputFetcher
      return yield* Effect.flip(fetcher.open("http://files.test/a.png", { maxBytes: 10 }))
    })).pipe(Effect.provide(strict)))
    expect([failure.reason, failure.message]).toEqual(["insecure", expect.stringContaining("WES_INPUT_URL_ALLOW_HTTP=true")])
    const plain = await startServer()
    try {
      const u = await plain.user()
      await plain.fetch("/v1/runner", json({ name: "r", endpoint: "http://127.0.0.1:8188" }, u.auth))
      const res = await create(u, { $photo: "https://example.com/cat.png" }, wf, plain)
      expect(res.status).toBe(400)
      expect((await readJson<ErrorBody>(res)).message).toContain("URL inputs are not enabled")
    } finally {
      await plain.close()
    }
  })
})
