/**
 * Issue 18, item 7: the operator API lists users (paged, by tier), shows one user with limits and
 * usage, lists a user's tokens without their values, and without WES_ADMIN_TOKEN every /admin
 * path answers 404, whatever the method (a GET on /admin/v1/users answered 405).
 */
import * as Option from "effect/Option"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ADMIN_TOKEN, type ErrorBody, json, readJson, startServer, type TestServer, type UserJson } from "./harness.js"

interface UserListJson {
  readonly users: ReadonlyArray<UserJson>
  readonly total: number
}

describe("operator API: users", () => {
  let server: TestServer
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
  beforeAll(async () => { server = await startServer() })
  afterAll(async () => { await server.close() })

  const createUser = async (tier: string) => readJson<UserJson>(await server.fetch("/admin/v1/users", json({ tier }, admin)))
  const list = async (query: string) => {
    const res = await server.fetch(`/admin/v1/users${query}`, { headers: admin })
    expect(res.status).toBe(200)
    return readJson<UserListJson>(res)
  }

  it("lists users newest first, paged, filtered by tier", async () => {
    const created: Array<UserJson> = []
    for (const tier of ["free", "pro", "free", "plus", "free"]) created.push(await createUser(tier))
    const all = await list("?per_page=100")
    expect(all.total).toBe(5)
    expect(all.users.map((u) => u.id)).toEqual(created.map((u) => u.id).reverse())
    const second = await list("?page=2&per_page=2")
    expect([second.total, second.users.map((u) => u.id)]).toEqual([5, [created[2]!.id, created[1]!.id]])
    const free = await list("?tier=free")
    expect([free.total, free.users.map((u) => u.tier)]).toEqual([3, ["free", "free", "free"]])
    const bad = await server.fetch("/admin/v1/users?tier=gold", { headers: admin })
    expect([bad.status, (await readJson<ErrorBody>(bad)).details]).toEqual([400, [{ field: "tier", message: "must be free, pro or plus" }]])
  })

  it("shows one user with the tier's limits and current usage", async () => {
    const user = await createUser("pro")
    const issued = await readJson<{ token: string }>(await server.fetch(`/admin/v1/users/${user.id}/tokens`, json({ name: "ci" }, admin)))
    const auth = { authorization: `Bearer ${issued.token}` }
    expect((await server.fetch("/v1/runner", json({ name: "r", endpoint: "http://runner.example:8188" }, auth))).status).toBe(201)
    const detail = await readJson<Record<string, unknown>>(await server.fetch(`/admin/v1/users/${user.id}`, { headers: admin }))
    expect(detail).toMatchObject({ id: user.id, tier: "pro", usage: { runners: 1, templates: 0, active_workflows: 0, workflows_today: 0 } })
    expect(detail["limits"]).toEqual(expect.objectContaining({ runners: expect.any(Number) }))
    // The same numbers the user sees.
    const own = await readJson<Record<string, unknown>>(await server.fetch("/v1/user", { headers: auth }))
    expect([detail["limits"], detail["usage"]]).toEqual([own["limits"], own["usage"]])
    // A user's tokens: names and dates, never the value or its hash.
    const tokens = await (await server.fetch(`/admin/v1/users/${user.id}/tokens`, { headers: admin })).text()
    expect(tokens).toContain("\"name\":\"ci\"")
    expect(tokens).not.toContain(issued.token)
    expect(tokens).not.toContain("token_hash")
  })
})

describe("operator API without WES_ADMIN_TOKEN", () => {
  let server: TestServer
  beforeAll(async () => { server = await startServer({ http: { adminToken: Option.none() } }) })
  afterAll(async () => { await server.close() })

  it("answers 404 on every /admin path and method", async () => {
    const answers: Array<readonly [string, string, number]> = []
    for (const path of ["/admin", "/admin/", "/admin/v1/users", "/admin/v1/users/x", "/admin/v1/tokens/x", "/admin/v1/managed-runners", "/admin/v2/nothing"]) {
      for (const method of ["GET", "POST", "PUT", "PATCH", "DELETE"]) {
        const res = await server.fetch(path, { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
        await res.arrayBuffer()
        answers.push([method, path, res.status])
      }
    }
    expect(answers).toEqual(answers.map(([m, p]) => [m, p, 404]))
  })
})
