/**
 * Suite 7: security checks. Tokens are stored only as hashes; tokens and runner header values never
 * reach the logs; uploaded file names cannot leave the blob directory or the runner's input folder;
 * outputs are served only to their owner; an expired token is refused by every authenticated
 * operation; and runner endpoints on private addresses are refused (unless WES_DEV or WES_RUNNER_ALLOW_PRIVATE=true).
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import { MemoryStoreLive } from "@wes/storage-memory"
import { PgStoreLive } from "@wes/storage-pg"
import { FakeComfyUI, loadImageWorkflow, solidPng } from "@wes/runner-client/testing"
import { type RunnerEvent, RunnerGateway, type RunnerTarget } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { FsBlobStoreLive } from "../src/FsBlobStore.js"
import { denyPrivateGateway, isPrivateAddress, type Resolver } from "../src/RunnerAddressPolicy.js"
import { movableClock } from "./clock.js"
import { makeContract, type SpecDocument } from "./contract.js"
import {
  ADMIN_TOKEN,
  type ErrorBody,
  fastDispatch,
  json,
  readJson,
  type RunnerJson,
  startServer,
  type TestServer,
  type WorkflowDetailJson,
  workflowForm
} from "./harness.js"
import { TestDatabase } from "./instances.js"
import { poll } from "./polling.js"

const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }

/** Every file under `dir`, as paths relative to it. */
const walk = async (dir: string): Promise<Array<string>> => {
  const out: Array<string> = []
  for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) out.push(...(await walk(full)).map((f) => path.join(entry.name, f)))
    else out.push(entry.name)
  }
  return out
}

const waitTerminal = (server: TestServer, auth: Record<string, string>, id: string): Promise<WorkflowDetailJson> =>
  poll(`workflow ${id} to end`, async () => {
    const w = await readJson<WorkflowDetailJson>(await server.fetch(`/v1/workflow/${id}`, { headers: auth }))
    return ["completed", "failed", "invalid", "cancelled"].includes(w.status) ? w : undefined
  }, 30_000)

describe("files, outputs, expired tokens and logs (suite 7)", () => {
  let sandbox: string
  let fake: FakeComfyUI
  let server: TestServer
  const clock = movableClock()
  beforeAll(async () => {
    // Blobs and the runner's ComfyUI directories side by side in one sandbox: nothing may appear elsewhere in it.
    sandbox = await fs.mkdtemp(path.join(os.tmpdir(), "wes-security-"))
    fake = await FakeComfyUI.start({ rootDir: path.join(sandbox, "comfy") })
    const store = Layer.merge(MemoryStoreLive, FsBlobStoreLive(path.join(sandbox, "blobs")).pipe(Layer.provide(NodeServices.layer)))
    server = await startServer({ dispatcher: fastDispatch, store, clock: clock.layer })
  })
  afterAll(async () => {
    await server.close()
    await fake.close()
    await fs.rm(sandbox, { recursive: true, force: true })
  })

  const EVIL_NAMES = ["../../etc/passwd", "/etc/passwd", "..\\..\\windows\\win.ini", "..%2F..%2Fescape.png", "%2e%2e%2fescape.png", "....//....//x.png", "a/../../../b.png", ".", "..", "C:\\x.png"]

  it("keeps uploaded file names inside the blob directory and the runner's input folder; serves outputs only to their owner", async () => {
    const owner = await server.user("pro")
    const other = await server.user("pro")
    expect((await server.fetch("/v1/runner", json({ name: "r", endpoint: fake.url }, owner.auth))).status).toBe(201)
    const ids: Array<string> = []
    for (const name of EVIL_NAMES) {
      const form = workflowForm({ name: "upload", $image: [solidPng(8, 8, 0x336699), name] }, loadImageWorkflow({ image: "$file(image)" }))
      // The workflow_json part's own file name is hostile too.
      const evilJson = new FormData()
      for (const [k, v] of form.entries()) {
        if (k === "workflow_json" && typeof v !== "string") evilJson.append(k, v, name)
        else evilJson.append(k, v)
      }
      const res = await server.fetch("/v1/workflow", { method: "POST", headers: owner.auth, body: evilJson })
      expect([name, res.status]).toEqual([name, 201])
      ids.push((await readJson<{ id: string }>(res)).id)
    }
    for (const [i, id] of ids.entries()) {
      const w = await waitTerminal(server, owner.auth, id)
      expect([EVIL_NAMES[i], w.status]).toEqual([EVIL_NAMES[i], "completed"])
      const stored = w.workflow_params.find(([k]) => k === "$file(image)")![1]
      expect(stored).toMatch(new RegExp(`^inputs/${id}/image/[A-Za-z0-9._-]+$`))
      expect(stored.split("/").every((s) => s !== "." && s !== "..")).toBe(true)
    }
    // What the runner was asked to store: plain names in WES's subfolder.
    expect(fake.uploads.length).toBeGreaterThanOrEqual(EVIL_NAMES.length)
    for (const u of fake.uploads) {
      expect(u.name ?? "").toMatch(/^[^/\\]+$/)
      expect([".", ".."]).not.toContain(u.name)
      expect(u.subfolder).toBe("wes")
    }
    // Nothing landed outside the two directories, and the runner's inputs are all in input/wes.
    const files = await walk(sandbox)
    expect(files.filter((f) => !f.startsWith(`blobs${path.sep}`) && !f.startsWith(`comfy${path.sep}`))).toEqual([])
    const inputs = files.filter((f) => f.startsWith(path.join("comfy", "input")))
    expect(inputs.length).toBeGreaterThan(0)
    expect(inputs.every((f) => f.startsWith(path.join("comfy", "input", "wes") + path.sep))).toBe(true)

    // Outputs: the owner lists and downloads them; anyone else gets 404 for both, whatever ids they combine.
    const id = ids[0]!
    const listed = await server.fetch(`/v1/workflow/${id}/outputs`, { headers: owner.auth })
    const { outputs } = await readJson<{ outputs: ReadonlyArray<{ id: string }> }>(listed)
    expect(outputs.length).toBeGreaterThan(0)
    const outputId = outputs[0]!.id
    expect((await server.fetch(`/v1/workflow/${id}/outputs/${outputId}`, { headers: owner.auth })).status).toBe(200)
    const theirs = await server.fetch("/v1/workflow", { method: "POST", headers: other.auth, body: workflowForm({ name: "x" }) })
    const theirId = theirs.status === 201 ? (await readJson<{ id: string }>(theirs)).id : id
    for (const p of [`/v1/workflow/${id}/outputs`, `/v1/workflow/${id}/outputs/${outputId}`, `/v1/workflow/${theirId}/outputs/${outputId}`]) {
      const res = await server.fetch(p, { headers: other.auth })
      expect([p, res.status]).toEqual([p, 404])
    }
  }, 120_000)

  it("refuses an expired token on every authenticated operation with 401 'Token has expired'", async () => {
    const contract = makeContract(await readJson<SpecDocument>(await server.fetch("/v1/openapi.json")))
    const user = await readJson<{ id: string }>(await server.fetch("/admin/v1/users", json({ tier: "plus" }, admin)))
    const soon = new Date(Date.now() + 10_000).toISOString()
    const { token } = await readJson<{ token: string }>(await server.fetch(`/admin/v1/users/${user.id}/tokens`, json({ name: "old", expires_at: soon }, admin)))
    const auth = { authorization: `Bearer ${token}` }
    // While valid, it owns a runner and a workflow, so the paths below name real resources.
    const runner = await readJson<RunnerJson>(await server.fetch("/v1/runner", json({ name: "r", endpoint: fake.url }, auth)))
    const workflow = await readJson<{ id: string }>(await server.fetch("/v1/workflow", { method: "POST", headers: auth, body: workflowForm({ name: "w" }) }))
    clock.advance("11 seconds")
    const secured = contract.operations.filter((o) => (o.spec.security ?? []).length > 0)
    expect(secured.length).toBeGreaterThanOrEqual(23)
    for (const o of secured) {
      const p = o.path.replace("{id}", o.path.startsWith("/v1/runner") ? runner.id : workflow.id).replace("{output_id}", workflow.id)
      const res = await server.fetch(p, { method: o.method, headers: auth })
      expect([o.method, o.path, res.status, await res.json()]).toEqual([o.method, o.path, 401, { status: 401, message: "Token has expired" }])
    }
  }, 60_000)

  it("never writes a token or a runner header value to the log, even for failing requests", async () => {
    const u = await server.user()
    const secret = "runner-secret-9f8e7d6c5b4a"
    const attempts: Array<[string, RequestInit]> = [
      ["/v1/runner", json({ name: "r", endpoint: fake.url, headers: { "X-Api-Key": secret } }, u.auth)],
      ["/v1/runner", json({ name: "r", endpoint: "http://unreachable.example", headers: { Authorization: `Bearer ${secret}` } }, u.auth)],
      ["/v1/runner", json({ name: "", endpoint: "nope", headers: { "X-Api-Key": secret } }, u.auth)],
      ["/v1/user", { headers: { authorization: `Bearer ${u.token}x` } }],
      ["/v1/user", { headers: { authorization: `Basic ${u.token}` } }],
      [`/v1/user?token=${u.token}`, { headers: u.auth }],
      ["/admin/v1/users", json({ tier: "nope" }, admin)],
      ["/admin/v1/users", json({ tier: "free" }, { authorization: `Bearer ${ADMIN_TOKEN}x` })],
      ["/v1/workflow", { method: "POST", headers: { ...u.auth, "content-type": "multipart/form-data; boundary==?=" }, body: secret }]
    ]
    for (const [p, init] of attempts) await server.fetch(p, init)
    const issued = await readJson<{ token: string }>(await server.fetch(`/admin/v1/users/${u.id}/tokens`, json({ name: secret }, admin)))
    await server.fetch("/v1/user", { headers: { authorization: `Bearer ${issued.token}` } })
    const log = server.logs.join("\n")
    expect(server.logs.length).toBeGreaterThan(attempts.length)
    for (const value of [u.token, issued.token, ADMIN_TOKEN, secret]) expect(log).not.toContain(value)
    // The random part of a token alone is no less secret.
    expect(log).not.toContain(u.token.slice(4, 30))
  })
})

describe("private runner addresses refused (suite 7)", () => {
  it("classifies private, loopback, link-local and unspecified addresses, IPv4 and IPv6", () => {
    const denied = [
      "127.0.0.1", "127.255.0.1", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "0.0.0.0", "100.64.0.1",
      "224.0.0.1", "255.255.255.255", "::", "::1", "fe80::1", "fe80::1%eth0", "fc00::1", "fd12:3456::1", "ff02::1",
      "::ffff:127.0.0.1", "::ffff:7f00:1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::127.0.0.1", "64:ff9b::a00:1", "2002:7f00:1::", "[::1]", "not-an-ip"
    ]
    const allowed = ["8.8.8.8", "1.1.1.1", "93.184.216.34", "172.32.0.1", "192.169.0.1", "2606:4700:4700::1111", "2001:4860:4860::8888", "::ffff:8.8.8.8", "64:ff9b::808:808"]
    expect(denied.filter((a) => !isPrivateAddress(a))).toEqual([])
    expect(allowed.filter(isPrivateAddress)).toEqual([])
  })

  describe("over HTTP", () => {
    let server: TestServer
    // A name whose DNS answer the test changes.
    const dns = new Map<string, ReadonlyArray<string>>([["runner.example", ["93.184.216.34"]], ["inside.example", ["10.0.0.7"]], ["mixed.example", ["93.184.216.34", "::1"]]])
    const resolver: Resolver = (host) => {
      const answer = dns.get(host)
      return answer === undefined ? Promise.reject(new Error("ENOTFOUND")) : Promise.resolve(answer)
    }
    beforeAll(async () => { server = await startServer({ denyPrivate: resolver }) })
    afterAll(async () => { await server.close() })

    it("refuses private endpoints on create and update with a 400 naming the setting", async () => {
      const u = await server.user("pro")
      for (const endpoint of [
        "http://127.0.0.1:8188", "http://localhost:8188", "http://[::1]:8188", "http://[::ffff:127.0.0.1]/", "http://0x7f.0.0.1/",
        "http://2130706433/", "http://10.0.0.1", "http://169.254.169.254/latest", "http://[fe80::1]/", "http://0.0.0.0:8188",
        "http://inside.example", "http://mixed.example", "http://nowhere.example"
      ]) {
        const res = await server.fetch("/v1/runner", json({ name: "r", endpoint }, u.auth))
        const body = await readJson<ErrorBody>(res)
        expect([endpoint, res.status, body.message]).toEqual([endpoint, 400, expect.stringContaining("WES_RUNNER_ALLOW_PRIVATE=true")])
      }
      const ok = await server.fetch("/v1/runner", json({ name: "r", endpoint: "http://runner.example:8188" }, u.auth))
      expect(ok.status).toBe(201)
      const runner = await readJson<RunnerJson>(ok)
      const moved = await server.fetch(`/v1/runner/${runner.id}`, { ...json({ endpoint: "http://192.168.0.10:8188" }, u.auth), method: "PATCH" })
      expect([moved.status, (await readJson<ErrorBody>(moved)).message]).toEqual([400, expect.stringContaining("WES_RUNNER_ALLOW_PRIVATE=true")])
      expect((await server.fetch(`/v1/runner/${runner.id}`, { ...json({ endpoint: "http://8.8.8.8:8188" }, u.auth), method: "PUT" })).status).toBe(200)
    })
  })

  it("refuses every call to a runner whose name has since resolved to a private address (dispatch)", async () => {
    let answer: ReadonlyArray<string> = ["93.184.216.34"]
    const calls: Array<string> = []
    const inner = Layer.succeed(RunnerGateway, RunnerGateway.of({
      probe: () => Effect.sync(() => { calls.push("probe") }).pipe(Effect.as({ version: "0.3.64", devices: [], jobs_api: false })),
      nodeReplacements: () => Effect.sync(() => { calls.push("nodeReplacements") }).pipe(Effect.as(Option.none())),
      objectInfo: () => Effect.sync(() => { calls.push("objectInfo") }).pipe(Effect.as({})),
      uploadInput: () => Effect.sync(() => { calls.push("upload") }).pipe(Effect.as({ name: "a", subfolder: "wes", type: "input" })),
      submit: () => Effect.sync(() => { calls.push("submit") }).pipe(Effect.as({ prompt_id: "p", number: 1 })),
      queue: () => Effect.sync(() => { calls.push("queue") }).pipe(Effect.as({ running: [], pending: [] })),
      history: () => Effect.sync(() => { calls.push("history") }).pipe(Effect.as(undefined), Effect.flatMap(() => Effect.succeedNone)),
      status: () => Effect.sync(() => { calls.push("status") }).pipe(Effect.as({ _tag: "Unknown" as const })),
      cancel: () => Effect.sync(() => { calls.push("cancel") }),
      download: () => Effect.sync(() => { calls.push("download") }).pipe(Effect.as({ content_type: "x", content: Stream.empty })),
      events: () => Effect.sync(() => { calls.push("events") }).pipe(Effect.andThen(Queue.bounded<RunnerEvent>(1)), Effect.tap((q) => Queue.offer(q, { _tag: "Connected" })))
    }))
    const gateway = denyPrivateGateway(async () => answer).pipe(Layer.provide(inner))
    const target = (kind: "user" | "managed"): RunnerTarget => ({ kind, id: "r1", name: "r", endpoint: "http://runner.example:8188", headers: {}, tags: [], status: "active" })
    const everyCall = (t: RunnerTarget) =>
      Effect.gen(function*() {
        const g = yield* RunnerGateway
        const prompt = { prompt_id: "p", prompt: {}, client_id: "c", extra_data: {} }
        const message = <A, E extends { readonly message: string }>(e: Effect.Effect<A, E>) =>
          Effect.map(Effect.result(e), (r) => (Result.isFailure(r) ? r.failure.message : undefined))
        const results = [
          yield* message(g.probe(t)),
          yield* message(g.nodeReplacements(t)),
          yield* message(g.objectInfo(t)),
          yield* message(g.uploadInput(t, { filename: "a", content_type: "x", content: Stream.empty })),
          yield* message(g.submit(t, prompt)),
          yield* message(g.queue(t)),
          yield* message(g.history(t, "p")),
          yield* message(g.status(t, "p")),
          yield* message(g.cancel(t, "p")),
          yield* message(g.download(t, { node_id: "1", filename: "a", subfolder: "", type: "output" }))
        ]
        const first = yield* Effect.scoped(Effect.flatMap(g.events(t, "c"), (q) => Effect.map(Queue.take(q), Option.some)))
        return { failed: results.filter((m) => m !== undefined), first }
      }).pipe(Effect.provide(gateway))
    const before = await Effect.runPromise(everyCall(target("user")))
    expect(before.failed).toEqual([])
    expect(calls).toHaveLength(11)
    // The name now points inside the network: nothing reaches the runner any more.
    answer = ["127.0.0.1"]
    calls.length = 0
    const after = await Effect.runPromise(everyCall(target("user")))
    expect(after.failed).toHaveLength(10)
    for (const m of after.failed) expect(m).toContain("WES_RUNNER_ALLOW_PRIVATE=true")
    expect(after.first).toEqual(expect.objectContaining({ value: expect.objectContaining({ _tag: "Disconnected" }) }))
    expect(calls).toEqual([])
    // Managed runners are the operator's own and are not restricted.
    const managed = await Effect.runPromise(everyCall(target("managed")))
    expect(managed.failed).toEqual([])
  })
})

describe("tokens at rest on PostgreSQL (suite 7)", () => {
  let db: TestDatabase
  let server: TestServer
  beforeAll(async () => {
    db = await TestDatabase.create()
    server = await startServer({ store: PgStoreLive({ url: Redacted.make(db.url()), maxConnections: 3 }) })
  }, 60_000)
  afterAll(async () => {
    await server.close()
    await db.drop()
  })

  it("stores tokens only as hashes: no text column of any table holds a token or its secret part", async () => {
    const tokens: Array<string> = []
    for (const tier of ["free", "pro", "plus"]) {
      const user = await readJson<{ id: string }>(await server.fetch("/admin/v1/users", json({ tier }, admin)))
      for (const name of ["ci", "laptop"]) {
        const res = await server.fetch(`/admin/v1/users/${user.id}/tokens`, json({ name, expires_at: new Date(Date.now() + 3_600_000).toISOString() }, admin))
        expect(res.status).toBe(201)
        tokens.push((await readJson<{ token: string }>(res)).token)
      }
    }
    // Used once each, so last-used bookkeeping has run too.
    for (const t of tokens) expect((await server.fetch("/v1/user", { headers: { authorization: `Bearer ${t}` } })).status).toBe(200)
    const columns = await db.query((sql) =>
      sql<{ table_name: string; column_name: string }>`SELECT table_name, column_name FROM information_schema.columns
        WHERE table_schema = ${db.schema} AND data_type IN ('text', 'character varying', 'character', 'json', 'jsonb', 'bytea')`
    )
    const tables = new Set(columns.map((c) => c.table_name))
    expect(tables.has("api_tokens") || [...tables].some((t) => t.includes("token"))).toBe(true)
    let scanned = 0
    for (const { table_name, column_name } of columns) {
      const values = await db.query((sql) => sql<{ v: string | null }>`SELECT ${sql(column_name)}::text AS v FROM ${sql(table_name)}`)
      scanned += values.length
      for (const { v } of values) {
        if (v === null) continue
        for (const t of tokens) expect([table_name, column_name, v.includes(t.slice(4, 30))]).toEqual([table_name, column_name, false])
      }
    }
    expect(scanned).toBeGreaterThan(0)
  }, 60_000)
})
