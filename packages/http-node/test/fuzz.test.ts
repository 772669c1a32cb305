/**
 * Suite 4: bad input. Requests generated (fast-check) from the server's own OpenAPI document
 * across every public operation: random bodies built from the declared schemas, multipart shapes
 * (well-formed and hand-broken), wrong content types, huge and empty values, bad, missing and
 * expired tokens, random path ids and query values. Every answer must be declared for its
 * operation with a body valid against the declared schema, no answer may be 5xx, and the
 * server must still be healthy afterwards.
 *
 * FUZZ_SEED replays a run; FUZZ_REQUESTS changes its size (default 10,000).
 */
import * as fc from "effect/testing/FastCheck"
import * as http from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Contract, makeContract, type Operation, type SpecDocument } from "./contract.js"
import { ADMIN_TOKEN, json, readJson, smokeWorkflow, startServer, type TestServer, workflowForm } from "./harness.js"

const SEED = Number(process.env["FUZZ_SEED"] ?? Math.floor(Math.random() * 2 ** 31))
const REQUESTS = Number(process.env["FUZZ_REQUESTS"] ?? 10_000)
const CONCURRENCY = 12

type Kind = "workflow" | "template" | "runner" | "any"

// ---- what a generated request is (symbolic: ids are picked from what exists when it runs) ----

type IdChoice =
  | { readonly _tag: "own"; readonly n: number }
  | { readonly _tag: "other"; readonly n: number }
  | { readonly _tag: "literal"; readonly value: string }

type Auth = "own" | "other" | "expired" | "missing" | "empty" | "scheme" | "garbage" | "madeUp" | "admin" | "huge"

type Part =
  | { readonly _tag: "text"; readonly name: string; readonly value: string }
  | { readonly _tag: "file"; readonly name: string; readonly filename: string; readonly type: string; readonly content: string }

type Body =
  | { readonly _tag: "none" }
  | { readonly _tag: "json"; readonly value: unknown }
  | { readonly _tag: "raw"; readonly contentType: string | undefined; readonly text: string }
  | { readonly _tag: "form"; readonly parts: ReadonlyArray<Part> }
  | { readonly _tag: "rawForm"; readonly boundary: string; readonly header: string; readonly text: string }

interface FuzzRequest {
  readonly op: number
  readonly method: string | undefined
  readonly ids: ReadonlyArray<IdChoice>
  readonly query: ReadonlyArray<readonly [string, string]>
  readonly auth: Auth
  readonly headers: ReadonlyArray<readonly [string, string]>
  readonly body: Body
}

// ---- arbitraries ----

const printable = (maxLength: number) => fc.string({ unit: "binary-ascii", maxLength }).map((s) => s.replace(/[^\x20-\x7e\t]/g, "?"))
const nasty = fc.constantFrom(
  "", " ", "0", "-1", "1.5", "1e3", "1e309", "NaN", "Infinity", "0x10", "null", "true", "[]", "{}", "%00", "%2F", "%2e%2e%2f",
  "../../etc/passwd", "..\\..\\windows\\win.ini", "/etc/passwd", "C:\\boot.ini", "' OR 1=1 --", "<script>alert(1)</script>",
  "\u0000", "ＡＢＣ", "🙂🙂", "e\u0301", "\u202e", "a,b,,c", " , ", "$text(x)", "#choice(x, a)", "00000000-0000-0000-0000-000000000000",
  "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF", "018f0000-0000-7000-8000-000000000000"
)
const big = (min: number, max: number) => fc.tuple(fc.integer({ min, max }), fc.constantFrom("x", "é", "🙂", "%", "a/")).map(([n, c]) => c.repeat(n))
const anyText = fc.oneof(
  { arbitrary: nasty, weight: 4 },
  { arbitrary: fc.string({ maxLength: 30 }), weight: 3 },
  { arbitrary: fc.string({ unit: "binary", maxLength: 30 }), weight: 2 },
  { arbitrary: fc.uuid().map(String), weight: 2 },
  { arbitrary: fc.integer().map(String), weight: 1 },
  { arbitrary: big(100, 3_000), weight: 1 }
)

const workflowDefinitions = fc.constantFrom<unknown>(
  smokeWorkflow(),
  smokeWorkflow({ color: "$text(color)" }),
  smokeWorkflow({ color: "$text(color, 7)", width: "#choice(size, 64, 128)" }),
  { ...smokeWorkflow(), "4": { class_type: "LoadImage", inputs: { image: "$file(image)" } } },
  { nodes: [], links: [] },
  { "1": { class_type: "X" } },
  { "1": { class_type: "X", inputs: { a: "$text(" } } },
  {},
  [],
  "text"
)
const jsonText = fc.oneof(
  workflowDefinitions.map((w) => JSON.stringify(w)),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  anyText,
  fc.constantFrom("{", "{\"1\":", "\uFEFF{}", "null", "1".repeat(400) + "e999")
)

const FIELD_NAMES = ["name", "workflow_json", "template_id", "tags", "description", "body", "$color", "$image", "#size", "$", "#", "$../x", "file"]
const fieldName = fc.oneof({ arbitrary: fc.constantFrom(...FIELD_NAMES), weight: 5 }, { arbitrary: anyText, weight: 1 })
const filename = fc.oneof(
  fc.constantFrom("workflow.json", "a.png", "", ".", "..", "../../etc/passwd", "/etc/passwd", "..%2F..%2Fetc", "a\\..\\b", "C:\\x.png", ".hidden", "x".repeat(300)),
  anyText
)
const part: fc.Arbitrary<Part> = fc.oneof(
  fc.record({ _tag: fc.constant("text" as const), name: fieldName, value: fc.oneof(fc.constantFrom("fuzz", "gpu", "a, b", "128", "64", "red"), anyText) }),
  fc.record({
    _tag: fc.constant("file" as const),
    name: fieldName,
    filename,
    type: fc.constantFrom("application/json", "image/png", "", "text/plain", "multipart/mixed"),
    content: fc.oneof(jsonText, fc.constant(""), big(10_000, 200_000))
  })
)
const formParts = fc.oneof(
  // Mostly close to what the operations expect, so the deeper code runs too.
  fc.tuple(
    fc.option(fc.oneof(fc.constantFrom("fuzz", "f"), anyText), { nil: undefined }),
    fc.option(fc.oneof({ arbitrary: workflowDefinitions.map((w) => JSON.stringify(w)), weight: 3 }, { arbitrary: jsonText, weight: 1 }), { nil: undefined }),
    fc.oneof({ arbitrary: fc.constant<ReadonlyArray<Part>>([]), weight: 2 }, { arbitrary: fc.array(part, { maxLength: 4 }), weight: 3 })
  ).map(([name, definition, rest]) => [
    ...(name === undefined ? [] : [{ _tag: "text" as const, name: "name", value: name }]),
    ...(definition === undefined ? [] : [{ _tag: "file" as const, name: "workflow_json", filename: "w.json", type: "application/json", content: definition }]),
    ...rest
  ]),
  // Template-shaped.
  fc.tuple(fc.oneof(fc.constant("t"), anyText), fc.oneof(fc.constant("d"), anyText), workflowDefinitions).map(([name, description, definition]): ReadonlyArray<Part> => [
    { _tag: "text", name: "name", value: name },
    { _tag: "text", name: "description", value: description },
    { _tag: "file", name: "body", filename: "t.json", type: "application/json", content: JSON.stringify(definition) }
  ]),
  fc.array(part, { maxLength: 12 })
)

const boundary = fc.constantFrom("b0undary", "----x", "a", "=?=", " spaced ", "x".repeat(80))
const rawForm: fc.Arbitrary<Body> = fc.record({
  _tag: fc.constant("rawForm" as const),
  boundary,
  header: fc.constantFrom("", "; boundary=", "; boundary=\"\"", "; charset=utf-8"),
  text: fc.oneof(
    fc.constantFrom(
      "--B\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nx\r\n",
      "--B\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nx\r\n--B--\r\n",
      "--B\r\nContent-Disposition: form-data\r\n\r\nx\r\n--B--\r\n",
      "--B\r\nContent-Disposition: form-data; name=\"workflow_json\"; filename=\"../w.json\"\r\nContent-Type: application/json\r\n\r\n{}\r\n--B--\r\n",
      "--B\r\nContent-Disposition: form-data; name*=UTF-8''%24x; filename*=UTF-8''..%2F..%2Fetc\r\n\r\nx\r\n--B--\r\n",
      "--B\r\nX: " + "y".repeat(20_000) + "\r\n\r\nx\r\n--B--\r\n",
      "--B--\r\n",
      "--B\r\n\r\n\r\n--B--",
      "garbage without boundaries",
      ""
    ),
    anyText
  )
})

const schemaText = (name: string): fc.Arbitrary<string> =>
  name === "endpoint"
    ? fc.oneof(
      fc.constantFrom("http://127.0.0.1:8188", "https://runner.example/", "http://unreachable.example", "ftp://x", "not a url", "http://", "http://[::1]:99999", "javascript:alert(1)", "http://a b"),
      fc.webUrl(),
      anyText
    )
    : anyText

/** A JSON value built from a JSON Schema of the document: mostly shaped like it, sometimes not at all. */
const fromSchema = (contract: Contract, schema: unknown, name: string, depth: number): fc.Arbitrary<unknown> => {
  const s = contract.resolve(schema)
  const junk = fc.jsonValue({ maxDepth: 2 })
  if (depth > 3 || typeof s !== "object" || s === null) return junk
  const node = s as { type?: string; enum?: ReadonlyArray<unknown>; anyOf?: ReadonlyArray<unknown>; properties?: Record<string, unknown>; items?: unknown; additionalProperties?: unknown }
  const shaped: fc.Arbitrary<unknown> = (() => {
    if (node.enum !== undefined) return fc.constantFrom(...node.enum)
    if (node.anyOf !== undefined) return fc.oneof(...node.anyOf.map((m) => fromSchema(contract, m, name, depth + 1)))
    switch (node.type) {
      case "string":
        return schemaText(name)
      case "integer":
      case "number":
        return fc.oneof(fc.integer(), fc.double())
      case "boolean":
        return fc.boolean()
      case "array":
        return fc.array(fromSchema(contract, node.items, name, depth + 1), { maxLength: 14 })
      case "object": {
        const props = Object.entries(node.properties ?? {})
        const known = fc.record(
          Object.fromEntries(props.map(([k, v]) => [k, fromSchema(contract, v, k, depth + 1)])),
          { requiredKeys: [] }
        )
        const extra = node.additionalProperties !== undefined && node.additionalProperties !== false && typeof node.additionalProperties === "object"
          ? fc.dictionary(fc.oneof(fc.constantFrom("X-Key", "Authorization", "x-b"), anyText), fromSchema(contract, node.additionalProperties, "value", depth + 1), { maxKeys: 5 })
          : fc.dictionary(fc.constantFrom("extra", "__proto__", "constructor"), junk, { maxKeys: 1 })
        return fc.tuple(known, extra).map(([a, b]) => ({ ...b, ...a }))
      }
      default:
        return junk
    }
  })()
  return fc.oneof({ arbitrary: shaped, weight: 5 }, { arbitrary: junk, weight: 1 })
}

const auth = fc.oneof(
  { arbitrary: fc.constant<Auth>("own"), weight: 14 },
  { arbitrary: fc.constantFrom<Auth>("other", "expired", "missing", "empty", "scheme", "garbage", "madeUp", "admin", "huge"), weight: 6 }
)

const HEADER_NAMES = ["idempotency-key", "last-event-id", "accept", "x-forwarded-for", "content-encoding", "range", "if-none-match", "x-http-method-override", "origin"]
const extraHeaders = fc.oneof({ arbitrary: fc.constant([]), weight: 2 }, { arbitrary: fc.array(
  fc.tuple(fc.constantFrom(...HEADER_NAMES), fc.oneof(printable(40), fc.constantFrom("", "0", "-1", "gzip", "99999999999999999999", "bytes=0-1"), big(100, 4_000).map((s) => s.replace(/[^\x20-\x7e]/g, "x")))),
  { maxLength: 3 }
), weight: 1 })

const idChoice: fc.Arbitrary<IdChoice> = fc.oneof(
  { arbitrary: fc.nat().map((n): IdChoice => ({ _tag: "own", n })), weight: 6 },
  { arbitrary: fc.nat().map((n): IdChoice => ({ _tag: "other", n })), weight: 2 },
  {
    arbitrary: fc.oneof(fc.uuid().map(String), anyText.map((s) => s.slice(0, 1_000)))
      .filter((s) => s !== "" && !/^(\.|%2e){1,2}$/i.test(s))
      .map((value): IdChoice => ({ _tag: "literal", value })),
    weight: 3
  }
)

const requestFor = (contract: Contract): fc.Arbitrary<FuzzRequest> =>
  fc.nat({ max: contract.operations.length - 1 }).chain((op) => {
    const operation = contract.operations[op]!
    const params = operation.spec.parameters ?? []
    const pathParams = params.filter((p) => p.in === "path")
    const queryParams = params.filter((p) => p.in === "query")
    const content = operation.spec.requestBody?.content ?? {}
    const query = fc.tuple(
      fc.array(fc.constantFrom(...(queryParams.length === 0 ? ["page"] : queryParams.map((p) => p.name))), { maxLength: 3 }).chain((names) =>
        fc.tuple(...names.map((n) =>
          fc.oneof(
            fromSchema(contract, queryParams.find((p) => p.name === n)?.schema, n, 0).map((v) => typeof v === "string" ? v : JSON.stringify(v)),
            fc.integer({ min: -5, max: 150 }).map(String)
          ).map((v) => [n, v] as const)
        ))
      ),
      fc.array(fc.tuple(anyText, anyText), { maxLength: 1 })
    ).map(([a, b]) => [...a, ...b])
    const bodies: Array<fc.WeightedArbitrary<Body>> = [
      { arbitrary: fc.constant<Body>({ _tag: "none" }), weight: 2 },
      { arbitrary: fc.record({ _tag: fc.constant("raw" as const), contentType: fc.option(fc.constantFrom("application/json", "text/plain", "multipart/form-data", "multipart/form-data; boundary=", "application/x-www-form-urlencoded", "application/octet-stream", "", "*/*", "application/json; charset=utf-16"), { nil: undefined }), text: fc.oneof(jsonText, big(1_000, 1_200_000)) }), weight: 2 },
      { arbitrary: rawForm, weight: 1 },
      { arbitrary: formParts.map((parts): Body => ({ _tag: "form", parts })), weight: content["multipart/form-data"] === undefined ? 1 : 8 }
    ]
    const jsonSchema = content["application/json"]?.schema
    if (jsonSchema !== undefined) bodies.push({ arbitrary: fromSchema(contract, jsonSchema, "body", 0).map((value): Body => ({ _tag: "json", value })), weight: 8 })
    return fc.record({
      op: fc.constant(op),
      method: fc.oneof({ arbitrary: fc.constant(undefined), weight: 30 }, { arbitrary: fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"), weight: 1 }),
      ids: fc.array(idChoice, { minLength: pathParams.length, maxLength: pathParams.length }),
      query,
      auth,
      headers: extraHeaders,
      body: fc.oneof(...bodies)
    })
  })

// ---- running them ----

interface Pools {
  readonly own: Record<Kind, Array<string>>
  readonly other: Record<Kind, Array<string>>
}

const kindOf = (path: string): Kind =>
  path.startsWith("/v1/workflow") ? "workflow" : path.startsWith("/v1/template") ? "template" : path.startsWith("/v1/runner") ? "runner" : "any"

const pick = (pool: ReadonlyArray<string>, n: number) => (pool.length === 0 ? "00000000-0000-7000-8000-000000000000" : pool[n % pool.length]!)

const bodyInit = async (body: Body): Promise<{ readonly body?: Uint8Array; readonly contentType?: string }> => {
  const bytes = (text: string) => new TextEncoder().encode(text)
  switch (body._tag) {
    case "none":
      return {}
    case "json":
      return { body: bytes(JSON.stringify(body.value) ?? "null"), contentType: "application/json" }
    case "raw":
      return body.contentType === undefined ? { body: bytes(body.text) } : { body: bytes(body.text), contentType: body.contentType }
    case "rawForm":
      return {
        body: bytes(body.text.replaceAll("--B", `--${body.boundary}`)),
        contentType: `multipart/form-data${body.header === "" ? `; boundary=${body.boundary}` : body.header}`
      }
    case "form": {
      const form = new FormData()
      for (const p of body.parts) {
        if (p._tag === "text") form.append(p.name, p.value)
        else form.append(p.name, new Blob([p.content], { type: p.type }), p.filename)
      }
      // The platform's own multipart encoding of the form.
      const encoded = new Request("http://localhost/", { method: "POST", body: form })
      return { body: new Uint8Array(await encoded.arrayBuffer()), contentType: encoded.headers.get("content-type")! }
    }
  }
}

interface Answer {
  readonly status: number
  readonly contentType: string
  readonly body: string
}

/**
 * One request on its own connection (no keep-alive, so one answer can never be confused with a
 * connection another request closed). An event stream's answer is its status and headers.
 */
const send = (base: string, path: string, method: string, headers: Record<string, string>, body: Uint8Array | undefined) =>
  new Promise<Answer>((resolve, reject) => {
    const length = body === undefined ? {} : { "content-length": String(body.byteLength) }
    const req = http.request(base + path, { method, headers: { ...headers, ...length, connection: "close" }, agent: false, timeout: 60_000 }, (res) => {
      const contentType = res.headers["content-type"] ?? ""
      if (contentType.startsWith("text/event-stream") || contentType.startsWith("application/octet-stream")) {
        res.destroy()
        return resolve({ status: res.statusCode ?? 0, contentType, body: "" })
      }
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => resolve({ status: res.statusCode ?? 0, contentType, body: Buffer.concat(chunks).toString("utf8") }))
      res.on("error", reject)
    })
    req.on("error", reject)
    req.on("timeout", () => req.destroy(new Error("no answer within 60 s")))
    req.end(body)
  })

describe("fuzzing every public operation from the OpenAPI document (suite 4)", () => {
  let server: TestServer
  let contract: Contract
  const tokens: Record<"own" | "other" | "expired", string> = { own: "", other: "", expired: "" }
  const pools: Pools = { own: { workflow: [], template: [], runner: [], any: [] }, other: { workflow: [], template: [], runner: [], any: [] } }

  beforeAll(async () => {
    server = await startServer()
    contract = makeContract(await readJson<SpecDocument>(await server.fetch("/v1/openapi.json")))
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
    // A token that expires during setup.
    const expiring = await readJson<{ id: string }>(await server.fetch("/admin/v1/users", json({ tier: "plus" }, admin)))
    const soon = new Date(Date.now() + 1_000).toISOString()
    tokens.expired = (await readJson<{ token: string }>(await server.fetch(`/admin/v1/users/${expiring.id}/tokens`, json({ name: "x", expires_at: soon }, admin)))).token
    const seed = async (who: "own" | "other") => {
      const u = await server.user("plus")
      tokens[who] = u.token
      for (const tags of [["gpu"], []]) {
        const r = await readJson<{ id: string }>(await server.fetch("/v1/runner", json({ name: "r", endpoint: "http://127.0.0.1:8188", tags }, u.auth)))
        pools[who].runner.push(r.id)
      }
      const t = await server.fetch("/v1/template", {
        method: "POST",
        headers: u.auth,
        body: (() => {
          const f = new FormData()
          f.append("name", "t")
          f.append("description", "d")
          f.append("body", new Blob([JSON.stringify(smokeWorkflow({ color: "$text(color, 1)" }))]), "t.json")
          return f
        })()
      })
      pools[who].template.push((await readJson<{ id: string }>(t)).id)
      const w = await server.fetch("/v1/workflow", { method: "POST", headers: u.auth, body: workflowForm({ name: "w" }) })
      pools[who].workflow.push((await readJson<{ id: string }>(w)).id)
    }
    await seed("own")
    await seed("other")
    await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(soon) + 50 - Date.now())))
  })
  afterAll(async () => { await server.close() })

  const authorization = (a: Auth): string | undefined => {
    switch (a) {
      case "own":
      case "other":
      case "expired":
        return `Bearer ${tokens[a]}`
      case "missing":
        return undefined
      case "empty":
        return ""
      case "scheme":
        return `Basic ${tokens.own}`
      case "garbage":
        return "Bearer " + "!".repeat(10)
      case "madeUp":
        return "Bearer wes_" + "a".repeat(42)
      case "admin":
        return `Bearer ${ADMIN_TOKEN}`
      case "huge":
        return "Bearer " + "x".repeat(8_000)
    }
  }

  const describeRequest = (r: FuzzRequest, url: string, method: string) =>
    `${method} ${url.slice(0, 300)} auth=${r.auth} headers=${JSON.stringify(r.headers).slice(0, 200)} body=${JSON.stringify(r.body).slice(0, 400)}`

  it(`answers ${REQUESTS} generated requests with declared statuses and bodies, never 5xx, and stays up`, async () => {
    const requests = fc.sample(requestFor(contract), { numRuns: REQUESTS, seed: SEED })
    const statuses = new Map<number, number>()
    const perOperation = new Map<string, number>()
    const problems: Array<string> = []
    const started = Date.now()
    let next = 0
    let resets = 0

    const run = async (r: FuzzRequest) => {
      const operation: Operation = contract.operations[r.op]!
      const kind = kindOf(operation.path)
      let i = 0
      const path = operation.path.replace(/\{[^}]+\}/g, (name) => {
        const choice = r.ids[i++]!
        const k: Kind = name === "{output_id}" ? "any" : kind
        const value = choice._tag === "literal" ? choice.value : pick(pools[choice._tag][k], choice.n)
        return encodeURIComponent(value)
      })
      const query = r.query.length === 0 ? "" : "?" + r.query.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join("&")
      const url = path + query
      const method = r.method ?? operation.method
      const { body, contentType } = await bodyInit(r.body)
      const headers: Record<string, string> = {}
      const a = authorization(r.auth)
      if (a !== undefined) headers["authorization"] = a
      for (const [k, v] of r.headers) headers[k] = v
      if (contentType !== undefined) headers["content-type"] = contentType
      const withBody = method !== "GET" && body !== undefined
      // The operation the answer must match: the one of this method on this path, if any.
      const answering = contract.operations.find((o) => o.path === operation.path && o.method === method) ?? operation
      let res: Answer
      try {
        res = await send(server.url, url, method, headers, withBody ? body : undefined)
      } catch (e) {
        // A head over 16 KB is refused (431) while the client may still be sending: a reset is then expected.
        const head = url.length + Object.entries(headers).reduce((n, [k, v]) => n + k.length + v.length + 4, 0)
        if (head > 16 * 1024 && /ECONNRESET|EPIPE/.test(String((e as { code?: unknown }).code))) {
          resets++
          return
        }
        problems.push(`request failed (${String(e)}): ${describeRequest(r, url, method)}`)
        return
      }
      const type = res.contentType
      const text = res.body
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
      const opKey = `${answering.method} ${answering.path}`
      perOperation.set(opKey, (perOperation.get(opKey) ?? 0) + 1)
      if (res.status >= 500) problems.push(`${res.status}: ${text.slice(0, 300)} <- ${describeRequest(r, url, method)}`)
      const problem = contract.check(answering, { status: res.status, contentType: type, body: text })
      if (problem !== undefined) problems.push(`${problem} <- ${describeRequest(r, url, method)}`)
      // Resources the fuzz creates become ids later requests use.
      if (res.status === 201 && r.auth === "own") {
        const id = (JSON.parse(text) as { id?: unknown }).id
        if (typeof id === "string") pools.own[kind].push(id)
      }
    }

    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      while (next < requests.length) await run(requests[next++]!)
    }))
    const seconds = (Date.now() - started) / 1000

    const histogram = Object.fromEntries([...statuses].sort(([a], [b]) => a - b))
    console.log(`fuzz: seed ${SEED}, ${requests.length} requests over ${perOperation.size} operations in ${seconds.toFixed(1)} s; statuses ${JSON.stringify(histogram)}; ${resets} connections reset while sending a head over 16 KB`)
    console.log(`fuzz: requests per operation ${JSON.stringify(Object.fromEntries([...perOperation].sort()))}`)

    // Still up and still serving.
    expect((await server.fetch("/healthz")).status).toBe(200)
    expect((await server.fetch("/v1/user", { headers: { authorization: `Bearer ${tokens.own}` } })).status).toBe(200)
    expect({ seed: SEED, problems: problems.slice(0, 15), count: problems.length }).toEqual({ seed: SEED, problems: [], count: 0 })
    expect([...statuses.keys()].filter((s) => s >= 500)).toEqual([])
    // Every public operation was exercised, and not only with refusals.
    for (const o of contract.operations) expect([`${o.method} ${o.path}`, (perOperation.get(`${o.method} ${o.path}`) ?? 0) >= 50]).toEqual([`${o.method} ${o.path}`, true])
    expect([...statuses.keys()].some((s) => s >= 200 && s < 300)).toBe(true)
  }, 180_000)
})
