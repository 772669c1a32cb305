/**
 * Suite 4: bad input. Requests generated (effect's Arbitrary) from the server's own OpenAPI document
 * across every public operation: random bodies built from the declared schemas, multipart shapes
 * (well-formed and hand-broken), wrong content types, huge and empty values, bad, missing and
 * expired tokens, random path ids and query values. Every answer must be declared for its
 * operation with a body valid against the declared schema, no answer may be 5xx, and the
 * server must still be healthy afterwards.
 *
 * FUZZ_SEED replays a run; FUZZ_REQUESTS changes its size (default 10,000).
 */
import * as Arbitrary from "effect/Arbitrary"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as http from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { movableClock } from "./clock.js"
import { type Contract, makeContract, type Operation, type SpecDocument } from "./contract.js"
import { ADMIN_TOKEN, json, readJson, smokeWorkflow, startServer, type TestServer, workflowForm } from "./harness.js"
import { integer, weighted } from "./arbitraries.js"

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

const natural = integer(0, 2 ** 31 - 1)

/** One of `values`, each as likely. */
const constantFrom = <const A extends ReadonlyArray<unknown>>(...values: A): Arbitrary.Arbitrary<A[number]> =>
  Arbitrary.map(integer(0, values.length - 1), (i) => values[i])

const oneOf = <A>(...choices: ReadonlyArray<Arbitrary.Arbitrary<A>>) => weighted(...choices.map((c) => [1, c] as const))
/** `arbitrary`, or (one time in six) undefined. */
const option = <A>(arbitrary: Arbitrary.Arbitrary<A>) => weighted<A | undefined>([1, Arbitrary.Constant(undefined)], [5, arbitrary])
/** Text of code points: a lone surrogate, which no client can send, becomes U+FFFD. */
const wellFormed = (s: string) => s.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, "\uFFFD")
/** A JSON value whose strings are all well formed. */
const wellFormedJson = (v: unknown): unknown =>
  typeof v === "string"
    ? wellFormed(v)
    : Array.isArray(v)
    ? v.map(wellFormedJson)
    : typeof v === "object" && v !== null
    ? Object.fromEntries(Object.entries(v).map(([k, x]) => [wellFormed(k), wellFormedJson(x)]))
    : v
const text = (maxLength: number) => Arbitrary.map(Arbitrary.schema(Schema.String.check(Schema.isMaxLength(maxLength))), wellFormed)
const uuid = Arbitrary.schema(Schema.String.check(Schema.isUUID()))
const jsonValue = Arbitrary.map(Arbitrary.schema(Schema.Json), wellFormedJson)
const webUrl = Arbitrary.schema(Schema.String.check(Schema.isPattern(/^https?:\/\/[a-z][a-z0-9-]{0,15}(\.[a-z]{2,6}){1,2}(:[1-9]\d{1,4})?(\/[A-Za-z0-9._~%-]{0,10}){0,3}$/)))
/** An object of keys and values, at most `maxKeys` of them. */
const dictionary = <A>(keys: Arbitrary.Arbitrary<string>, values: Arbitrary.Arbitrary<A>, maxKeys: number) =>
  Arbitrary.map(Arbitrary.array(Arbitrary.all([keys, values]), { maxLength: maxKeys }), (entries) => Object.fromEntries(entries))

const printable = (maxLength: number) => Arbitrary.map(text(maxLength), (s) => s.replace(/[^\x20-\x7e\t]/g, "?"))
const nasty = constantFrom(
  "", " ", "0", "-1", "1.5", "1e3", "1e309", "NaN", "Infinity", "0x10", "null", "true", "[]", "{}", "%00", "%2F", "%2e%2e%2f",
  "../../etc/passwd", "..\\..\\windows\\win.ini", "/etc/passwd", "C:\\boot.ini", "' OR 1=1 --", "<script>alert(1)</script>",
  "\u0000", "ＡＢＣ", "🙂🙂", "e\u0301", "\u202e", "a,b,,c", " , ", "$text(x)", "#choice(x, a)", "00000000-0000-0000-0000-000000000000",
  "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF", "018f0000-0000-7000-8000-000000000000"
)
const big = (min: number, max: number) => Arbitrary.map(Arbitrary.all([integer(min, max), constantFrom("x", "é", "🙂", "%", "a/")]), ([n, c]) => c.repeat(n))
const anyText = weighted<string>(
  [4, nasty],
  [3, printable(30)],
  [2, text(30)],
  [2, uuid],
  [1, Arbitrary.map(Arbitrary.schema(Schema.Int), String)],
  [1, big(100, 3_000)]
)

const workflowDefinitions = constantFrom<ReadonlyArray<unknown>>(
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
const jsonText = oneOf<string>(
  Arbitrary.map(workflowDefinitions, (w) => JSON.stringify(w)),
  Arbitrary.map(jsonValue, (v) => JSON.stringify(v)),
  anyText,
  constantFrom("{", "{\"1\":", "\uFEFF{}", "null", "1".repeat(400) + "e999")
)

const FIELD_NAMES = ["name", "workflow_json", "template_id", "tags", "description", "body", "$color", "$image", "#size", "$", "#", "$../x", "file"]
const fieldName = weighted<string>([5, constantFrom(...FIELD_NAMES)], [1, anyText])
const filename = oneOf<string>(
  constantFrom("workflow.json", "a.png", "", ".", "..", "../../etc/passwd", "/etc/passwd", "..%2F..%2Fetc", "a\\..\\b", "C:\\x.png", ".hidden", "x".repeat(300)),
  anyText
)
const part: Arbitrary.Arbitrary<Part> = oneOf<Part>(
  Arbitrary.all({ _tag: Arbitrary.Constant("text" as const), name: fieldName, value: oneOf(constantFrom("fuzz", "gpu", "a, b", "128", "64", "red"), anyText) }),
  Arbitrary.all({
    _tag: Arbitrary.Constant("file" as const),
    name: fieldName,
    filename,
    type: constantFrom("application/json", "image/png", "", "text/plain", "multipart/mixed"),
    content: oneOf(jsonText, Arbitrary.Constant(""), big(10_000, 200_000))
  })
)
const formParts = oneOf<ReadonlyArray<Part>>(
  // Mostly close to what the operations expect, so the deeper code runs too.
  Arbitrary.map(Arbitrary.all([
    option(oneOf(constantFrom("fuzz", "f"), anyText)),
    option(weighted([3, Arbitrary.map(workflowDefinitions, (w) => JSON.stringify(w))], [1, jsonText])),
    weighted<ReadonlyArray<Part>>([2, Arbitrary.Constant([])], [3, Arbitrary.array(part, { maxLength: 4 })])
  ]), ([name, definition, rest]): ReadonlyArray<Part> => [
    ...(name === undefined ? [] : [{ _tag: "text" as const, name: "name", value: name }]),
    ...(definition === undefined ? [] : [{ _tag: "file" as const, name: "workflow_json", filename: "w.json", type: "application/json", content: definition }]),
    ...rest
  ]),
  // Template-shaped.
  Arbitrary.map(Arbitrary.all([oneOf(Arbitrary.Constant("t"), anyText), oneOf(Arbitrary.Constant("d"), anyText), workflowDefinitions]), ([name, description, definition]): ReadonlyArray<Part> => [
    { _tag: "text", name: "name", value: name },
    { _tag: "text", name: "description", value: description },
    { _tag: "file", name: "body", filename: "t.json", type: "application/json", content: JSON.stringify(definition) }
  ]),
  Arbitrary.array(part, { maxLength: 12 })
)

const boundary = constantFrom("b0undary", "----x", "a", "=?=", " spaced ", "x".repeat(80))
const rawForm: Arbitrary.Arbitrary<Body> = Arbitrary.all({
  _tag: Arbitrary.Constant("rawForm" as const),
  boundary,
  header: constantFrom("", "; boundary=", "; boundary=\"\"", "; charset=utf-8"),
  text: oneOf<string>(
    constantFrom(
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

const schemaText = (name: string): Arbitrary.Arbitrary<string> =>
  name === "endpoint"
    ? oneOf<string>(
      constantFrom("http://127.0.0.1:8188", "https://runner.example/", "http://unreachable.example", "ftp://x", "not a url", "http://", "http://[::1]:99999", "javascript:alert(1)", "http://a b"),
      webUrl,
      anyText
    )
    : anyText

/** A JSON value built from a JSON Schema of the document: mostly shaped like it, sometimes not at all. */
const fromSchema = (contract: Contract, schema: unknown, name: string, depth: number): Arbitrary.Arbitrary<unknown> => {
  const s = contract.resolve(schema)
  const junk: Arbitrary.Arbitrary<unknown> = jsonValue
  if (depth > 3 || typeof s !== "object" || s === null) return junk
  const node = s as { type?: string; enum?: ReadonlyArray<unknown>; anyOf?: ReadonlyArray<unknown>; properties?: Record<string, unknown>; items?: unknown; additionalProperties?: unknown }
  const shaped: Arbitrary.Arbitrary<unknown> = (() => {
    if (node.enum !== undefined) return constantFrom(...node.enum)
    if (node.anyOf !== undefined) return oneOf(...node.anyOf.map((m) => fromSchema(contract, m, name, depth + 1)))
    switch (node.type) {
      case "string":
        return schemaText(name)
      case "integer":
      case "number":
        return oneOf<unknown>(Arbitrary.schema(Schema.Int), Arbitrary.schema(Schema.Number))
      case "boolean":
        return Arbitrary.schema(Schema.Boolean)
      case "array":
        return Arbitrary.array(fromSchema(contract, node.items, name, depth + 1), { maxLength: 14 })
      case "object": {
        const props = Object.entries(node.properties ?? {})
        // Each declared field, or (sometimes) not sent.
        const known = Arbitrary.map(
          Arbitrary.all(props.map(([k, v]) => option(fromSchema(contract, v, k, depth + 1)))),
          (values) => Object.fromEntries(props.flatMap(([k], i) => (values[i] === undefined ? [] : [[k, values[i]]])))
        )
        const extra = node.additionalProperties !== undefined && node.additionalProperties !== false && typeof node.additionalProperties === "object"
          ? dictionary(oneOf(constantFrom("X-Key", "Authorization", "x-b"), anyText), fromSchema(contract, node.additionalProperties, "value", depth + 1), 5)
          : dictionary(constantFrom("extra", "__proto__", "constructor"), junk, 1)
        return Arbitrary.map(Arbitrary.all([known, extra]), ([a, b]) => ({ ...b, ...a }))
      }
      default:
        return junk
    }
  })()
  return weighted([5, shaped], [1, junk])
}

const auth = weighted<Auth>(
  [14, Arbitrary.Constant("own")],
  [6, constantFrom("other", "expired", "missing", "empty", "scheme", "garbage", "madeUp", "admin", "huge")]
)

const HEADER_NAMES = ["idempotency-key", "last-event-id", "accept", "x-forwarded-for", "content-encoding", "range", "if-none-match", "x-http-method-override", "origin"]
const extraHeaders = weighted<ReadonlyArray<readonly [string, string]>>([2, Arbitrary.Constant([])], [1, Arbitrary.array(
  Arbitrary.all([
    constantFrom(...HEADER_NAMES),
    oneOf(printable(40), constantFrom("", "0", "-1", "gzip", "99999999999999999999", "bytes=0-1"), Arbitrary.map(big(100, 4_000), (s) => s.replace(/[^\x20-\x7e]/g, "x")))
  ]),
  { maxLength: 3 }
)])

const idChoice: Arbitrary.Arbitrary<IdChoice> = weighted<IdChoice>(
  [6, Arbitrary.map(natural, (n): IdChoice => ({ _tag: "own", n }))],
  [2, Arbitrary.map(natural, (n): IdChoice => ({ _tag: "other", n }))],
  [3, oneOf(uuid, Arbitrary.map(anyText, (s) => s.slice(0, 1_000))).pipe(
    Arbitrary.filter((s) => s !== "" && !/^(\.|%2e){1,2}$/i.test(s)),
    Arbitrary.map((value): IdChoice => ({ _tag: "literal", value }))
  )]
)

const requestFor = (contract: Contract): Arbitrary.Arbitrary<FuzzRequest> =>
  Arbitrary.flatMap(integer(0, contract.operations.length - 1), (op) => {
    const operation = contract.operations[op]!
    const params = operation.spec.parameters ?? []
    const pathParams = params.filter((p) => p.in === "path")
    const queryParams = params.filter((p) => p.in === "query")
    const content = operation.spec.requestBody?.content ?? {}
    const named = Arbitrary.flatMap(
      Arbitrary.array(constantFrom(...(queryParams.length === 0 ? ["page"] : queryParams.map((p) => p.name))), { maxLength: 3 }),
      (names) =>
        Arbitrary.all(names.map((n) =>
          Arbitrary.map(
            oneOf<string>(
              Arbitrary.map(fromSchema(contract, queryParams.find((p) => p.name === n)?.schema, n, 0), (v) => (typeof v === "string" ? v : JSON.stringify(v))),
              Arbitrary.map(integer(-5, 150), String)
            ),
            (v) => [n, v] as const
          )
        ))
    )
    const query = Arbitrary.map(Arbitrary.all([named, Arbitrary.array(Arbitrary.all([anyText, anyText]), { maxLength: 1 })]), ([a, b]) => [...a, ...b])
    const bodies: Array<readonly [number, Arbitrary.Arbitrary<Body>]> = [
      [2, Arbitrary.Constant<Body>({ _tag: "none" })],
      [2, Arbitrary.all({
        _tag: Arbitrary.Constant("raw" as const),
        contentType: option(constantFrom("application/json", "text/plain", "multipart/form-data", "multipart/form-data; boundary=", "application/x-www-form-urlencoded", "application/octet-stream", "", "*/*", "application/json; charset=utf-16")),
        text: oneOf(jsonText, big(1_000, 1_200_000))
      })],
      [1, rawForm],
      [content["multipart/form-data"] === undefined ? 1 : 8, Arbitrary.map(formParts, (parts): Body => ({ _tag: "form", parts }))]
    ]
    const jsonSchema = content["application/json"]?.schema
    if (jsonSchema !== undefined) bodies.push([8, Arbitrary.map(fromSchema(contract, jsonSchema, "body", 0), (value): Body => ({ _tag: "json", value }))])
    return Arbitrary.all({
      op: Arbitrary.Constant(op),
      method: weighted<string | undefined>([30, Arbitrary.Constant(undefined)], [1, constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")]),
      ids: Arbitrary.array(idChoice, { minLength: pathParams.length, maxLength: pathParams.length }),
      query,
      auth,
      headers: extraHeaders,
      body: weighted(...bodies)
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

  const clock = movableClock()

  beforeAll(async () => {
    server = await startServer({ clock: clock.layer })
    contract = makeContract(await readJson<SpecDocument>(await server.fetch("/v1/openapi.json")))
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
    // A token that expires during setup.
    const expiring = await readJson<{ id: string }>(await server.fetch("/admin/v1/users", json({ tier: "plus" }, admin)))
    const inAnHour = new Date(Date.now() + 3_600_000).toISOString()
    tokens.expired = (await readJson<{ token: string }>(await server.fetch(`/admin/v1/users/${expiring.id}/tokens`, json({ name: "x", expires_at: inAnHour }, admin)))).token
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
    clock.advance("61 minutes")
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
    // Strings, arrays and objects up to 30 long where the generators do not say (the default would stop at 10).
    const requests = await Effect.runPromise(Arbitrary.sampleEffect(requestFor(contract), { count: REQUESTS, seed: SEED, size: 30 }))
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
