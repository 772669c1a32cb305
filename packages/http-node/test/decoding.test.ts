/**
 * Every route's request is decoded by the schemas its declaration shows (and the OpenAPI document
 * publishes): for each endpoint of WesApi, each declared field of its body, query and headers is
 * sent with a value that field's own schema rejects, and bodies with a field they do not declare;
 * each answer must be the contract's 400 naming that field. The cases come from the declaration,
 * so a route added later is covered without touching this file.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { requestOf, routes } from "./decoding-cases.js"
import { type ErrorBody, startServer, type TestServer } from "./harness.js"
import { type Fixtures, makeFixtures, send } from "./replay.js"

describe("every route's request is decoded by its declared schema", () => {
  let server: TestServer
  let fixtures: Fixtures
  beforeAll(async () => {
    server = await startServer()
    fixtures = await makeFixtures(server)
  })
  afterAll(async () => { await server.close() })

  it("answers a field the schema rejects with a 400 naming it, on every route that declares one", async () => {
    const answers: Array<unknown> = []
    const wording: Array<string> = []
    for (const route of routes) {
      for (const c of route.cases) {
        const res = await send(fixtures, requestOf(route, c))
        const error = JSON.parse(res.body) as ErrorBody
        answers.push({ ...c, status: res.status, named: (error.details ?? []).some((d) => d.field === c.field) })
        // Details speak the contract's words: no schema wording, no echo of what was sent.
        for (const d of error.details ?? []) if (/^Expected |, actual |DateTime|readonly|ReadonlyArray/.test(d.message)) wording.push(`${route.key} ${d.field}: ${d.message}`)
      }
    }
    expect(answers).toEqual(answers.map((a) => ({ ...(a as object), status: 400, named: true })))
    expect(wording).toEqual([])
    // Every route that declares a body, a query or headers was exercised, but the download: its
    // Range, If-None-Match and If-Range take any text (RFC 9110: one it cannot read is ignored).
    expect(routes.filter((r) => r.declares && r.cases.length === 0).map((r) => r.key)).toEqual(["GET /v1/workflow/:id/outputs/:output_id"])
    expect(answers.length).toBeGreaterThan(40)
    console.log(`decoding: ${answers.length} cases over ${routes.filter((r) => r.cases.length > 0).length} routes`)
  }, 60_000)
})
