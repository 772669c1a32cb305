/**
 * Issue 18, item 5: user JSON is bounded. A workflow or template nested deeper than 64 levels, or
 * larger than 5 MB, is a 400 naming the limit (it used to be accepted, then keep a core busy and
 * fail to encode on GET); so is a JSON request body nested too deep. A property run feeds deep and
 * wide documents to every endpoint that accepts JSON: each answer is a declared one, never a 500
 * or a hang. A placeholder of no known kind (`$txt(color)`) is a 400 naming the known kinds, and
 * validation details speak the contract's words, not the schema library's.
 */
import * as Arbitrary from "effect/Arbitrary"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ADMIN_TOKEN, type ErrorBody, json, readJson, smokeWorkflow, startServer, type TestServer, workflowForm } from "./harness.js"

/** A JSON text nesting arrays `depth` deep inside an input value of the smoke workflow. */
const deepWorkflow = (depth: number) => {
  const value = "[".repeat(depth) + "]".repeat(depth)
  const smoke = JSON.stringify(smokeWorkflow())
  return smoke.replace("\"color\":255", `"color":${value}`)
}

const natural = (maximum: number) => Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum })))

/** One of `choices`, each as likely. */
const oneOf = <A>(...choices: ReadonlyArray<Arbitrary.Arbitrary<A>>): Arbitrary.Arbitrary<A> =>
  Arbitrary.flatMap(natural(choices.length - 1), (i) => choices[i]!)

const formWithText = (fields: Record<string, string>) => {
  const form = new FormData()
  for (const [key, value] of Object.entries(fields)) form.append(key, new Blob([value], { type: "application/json" }), "f.json")
  return form
}

describe("user JSON is bounded", () => {
  let server: TestServer
  let auth: Record<string, string>
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
  beforeAll(async () => {
    server = await startServer()
    auth = (await server.user("plus")).auth
    expect((await server.fetch("/v1/runner", json({ name: "r0", endpoint: "http://runner0.example:8188" }, auth))).status).toBe(201)
  })
  afterAll(async () => { await server.close() })

  const createWorkflow = (text: string, extra: Record<string, string> = {}) => {
    const form = formWithText({ workflow_json: text })
    form.append("name", "deep")
    for (const [k, v] of Object.entries(extra)) form.append(k, v)
    return server.fetch("/v1/workflow", { method: "POST", headers: auth, body: form })
  }

  it("refuses workflow_json nested 8,000 or 200,000 deep with a 400 naming the limit, and accepts 60", async () => {
    for (const depth of [8_000, 200_000, 65]) {
      const res = await createWorkflow(deepWorkflow(depth))
      const error = await readJson<ErrorBody>(res)
      expect([depth, res.status, error.message]).toEqual([depth, 400, "workflow_json: is nested deeper than 64 levels (the limit is 64)"])
    }
    const ok = await createWorkflow(deepWorkflow(60))
    expect(ok.status).toBe(201)
    const { id } = await readJson<{ id: string }>(ok)
    // It reads back (it used to answer 400 "Could not encode to JSON").
    const detail = await server.fetch(`/v1/workflow/${id}`, { headers: auth })
    expect(detail.status).toBe(200)
    // Nothing deep was counted against the user: the refused ones were never created.
    const list = await readJson<{ total: number }>(await server.fetch("/v1/workflow", { headers: auth }))
    expect(list.total).toBe(1)
  })

  it("refuses workflow_json over 5 MB with a 400 naming the limit", async () => {
    const big = JSON.stringify(smokeWorkflow({ note: "x".repeat(5 * 1024 * 1024) }))
    const res = await createWorkflow(big)
    expect(res.status).toBe(400)
    expect((await readJson<ErrorBody>(res)).message).toBe(`workflow_json: is larger than 5 MB (the limit is ${5 * 1024 * 1024} bytes)`)
  })

  it("refuses a template body nested too deep, on create and update", async () => {
    const form = formWithText({ body: deepWorkflow(10_000) })
    form.append("name", "t")
    form.append("description", "d")
    const res = await server.fetch("/v1/template", { method: "POST", headers: auth, body: form })
    expect([res.status, (await readJson<ErrorBody>(res)).message]).toEqual([400, "body: is nested deeper than 64 levels (the limit is 64)"])
  })

  it("refuses a JSON request body nested too deep with a 400 (not a 500)", async () => {
    const deep = "[".repeat(100_000) + "]".repeat(100_000)
    for (const [path, headers] of [["/v1/runner", auth], ["/admin/v1/users", admin]] as const) {
      const res = await server.fetch(path, { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: `{"name":${deep}}` })
      expect([path, res.status, (await readJson<ErrorBody>(res)).message]).toEqual([path, 400, "body: is nested deeper than 64 levels (the limit is 64)"])
    }
  })

  it("answers deep and wide documents on every endpoint that accepts JSON with a declared 4xx, never a 500", async () => {
    const runner = await readJson<{ id: string }>(await server.fetch("/v1/runner", json({ name: "r", endpoint: "http://runner.example:8188" }, auth)))
    const template = await readJson<{ id: string }>(await server.fetch("/v1/template", {
      method: "POST", headers: auth, body: (() => {
        const f = formWithText({ body: JSON.stringify(smokeWorkflow()) })
        f.append("name", "t")
        f.append("description", "d")
        return f
      })()
    }))
    const user = await readJson<{ id: string }>(await server.fetch("/admin/v1/users", json({ tier: "free" }, admin)))
    const document = oneOf(
      Arbitrary.map(natural(300_000), (n) => "[".repeat(n) + "]".repeat(n)),
      Arbitrary.map(natural(50_000), (n) => "{" + Array.from({ length: n }, (_, i) => `"k${i}":${i}`).join(",") + "}"),
      Arbitrary.map(natural(20_000), (n) => "{\"a\":".repeat(n) + "1" + "}".repeat(n)),
      // Any JSON value, a few levels deep (the checker's size bounds it).
      Arbitrary.map(Arbitrary.schema(Schema.Json), (v) => JSON.stringify(v))
    )
    const jsonRoutes: ReadonlyArray<readonly [string, string, Record<string, string>]> = [
      ["POST", "/v1/runner", auth],
      ["PATCH", `/v1/runner/${runner.id}`, auth],
      ["POST", "/admin/v1/users", admin],
      ["PATCH", `/admin/v1/users/${user.id}`, admin],
      ["POST", `/admin/v1/users/${user.id}/tokens`, admin],
      ["POST", "/admin/v1/managed-runners", admin]
    ]
    const formRoutes: ReadonlyArray<readonly [string, string, Record<string, string>]> = [
      ["POST", "/v1/workflow", { name: "w" }],
      ["POST", "/v1/template", { name: "t", description: "d" }],
      ["PUT", `/v1/template/${template.id}`, {}]
    ]
    const property = async ([text, which]: readonly [string, number]) => {
      let res: Response
      if (which < jsonRoutes.length) {
        const [method, path, headers] = jsonRoutes[which]!
        res = await server.fetch(path, { method, headers: { ...headers, "content-type": "application/json" }, body: text })
      } else {
        const [method, path, fields] = formRoutes[which - jsonRoutes.length]!
        const form = formWithText({ [path.startsWith("/v1/workflow") ? "workflow_json" : "body"]: text })
        for (const [k, v] of Object.entries(fields)) form.append(k, v)
        res = await server.fetch(path, { method, headers: auth, body: form })
      }
      const body = await readJson<ErrorBody>(res)
      expect(res.status).toBeLessThan(500)
      if (res.status >= 400) expect(body.status).toBe(res.status)
      expect((body.details ?? []).length).toBeLessThanOrEqual(20)
      return true
    }
    const result = await Effect.runPromise(Arbitrary.checkEffect(
      Arbitrary.all([document, natural(jsonRoutes.length + formRoutes.length - 1)]),
      (input) => Effect.promise(() => property(input)),
      { runs: 40 }
    ))
    // A failure says the shrunk input and a replay token.
    expect(Arbitrary.formatCheckFailure(result)).toBeUndefined()
  }, 120_000)

  it("refuses a placeholder of no known kind, naming the kinds (it used to reach the runner as text)", async () => {
    for (const typo of ["$txt(color)", "#text(color)", "$choice(color, a, b)"]) {
      const res = await server.fetch("/v1/workflow", { method: "POST", headers: auth, body: workflowForm({ name: "typo" }, smokeWorkflow({ color: typo })) })
      const error = await readJson<ErrorBody>(res)
      expect([typo, res.status]).toEqual([typo, 400])
      expect(error.details).toEqual([{ field: "workflow_json.1.inputs.color", message: expect.stringContaining("is not a placeholder kind; the kinds are $text(name)") }])
    }
    // Ordinary text that only starts with a sigil is still text.
    const ok = await server.fetch("/v1/workflow", { method: "POST", headers: auth, body: workflowForm({ name: "ok" }, smokeWorkflow({ note: "$5 (cheap)" })) })
    expect(ok.status).toBe(201)
  })

  it("says what is wrong in the contract's words, without the schema library's wording or the value sent", async () => {
    const runner = await server.fetch("/v1/runner", json({ name: 12345, endpoint: "http://r.example", headers: 7, tags: "gpu" }, auth))
    expect(await readJson<ErrorBody>(runner)).toEqual({
      status: 400,
      message: "name: must be a string",
      details: [
        { field: "name", message: "must be a string" },
        { field: "headers", message: "must be an object of strings" },
        { field: "tags", message: "must be an array of strings" }
      ]
    })
    const user = await server.fetch("/admin/v1/users", json({ tier: "free", email: 5 }, admin))
    expect((await readJson<ErrorBody>(user)).details).toEqual([{ field: "email", message: "must be a string or null" }])
    const { id } = await readJson<{ id: string }>(await server.fetch("/admin/v1/users", json({ tier: "free" }, admin)))
    const token = await server.fetch(`/admin/v1/users/${id}/tokens`, json({ name: "t", expires_at: "nope" }, admin))
    const details = JSON.stringify((await readJson<ErrorBody>(token)).details)
    expect(details).not.toMatch(/Expected|actual|DateTime|nope/)
    // An over-long tag is named, not echoed back.
    const long = "x".repeat(5_000)
    const tagged = await server.fetch("/v1/workflow", { method: "POST", headers: auth, body: workflowForm({ name: "t", tags: long }) })
    const text = await tagged.text()
    expect(tagged.status).toBe(400)
    expect(text).not.toContain("xxxxxxxxxx")
  })
})
