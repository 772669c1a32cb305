/**
 * Agent runners and their runner tokens over the API (issue 34, items 1 and 2): an agent runner
 * is registered without an endpoint and never probed; its owner creates tokens (shown once),
 * lists them (never the value) and revokes them; `AgentTokens` (what the agent endpoint asks)
 * accepts exactly the live tokens of existing agent runners; and /v1 refuses a runner token.
 */
import { AgentTokens, generateRunnerToken, PlatformLive } from "@wes/core"
import { makeClient } from "@wes/api"
import * as Effect from "effect/Effect"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as Option from "effect/Option"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ErrorBody, json, readJson, type RunnerJson, startServer, type TestServer } from "./harness.js"

interface IssuedJson {
  readonly id: string
  readonly token: string
  readonly runner_id: string
  readonly created_at: string
}
interface TokenJson {
  readonly id: string
  readonly created_at: string
  readonly last_used_at: string | null
  readonly revoked_at: string | null
}

let server: TestServer
beforeAll(async () => { server = await startServer() })
afterAll(async () => { await server.close() })

type Auth = Record<string, string>
const createRunner = (auth: Auth, body: unknown) => server.fetch("/v1/runner", json(body, auth))
const agentRunner = async (auth: Auth, name = "home gpu") => {
  const res = await createRunner(auth, { name, connection: "agent" })
  expect(res.status).toBe(201)
  return readJson<RunnerJson>(res)
}
const newToken = (auth: Auth, runnerId: string) => server.fetch(`/v1/runner/${runnerId}/agent-token`, { method: "POST", headers: auth })
const listTokens = async (auth: Auth, runnerId: string) => {
  const res = await server.fetch(`/v1/runner/${runnerId}/agent-tokens`, { headers: auth })
  expect(res.status).toBe(200)
  return readJson<Array<TokenJson>>(res)
}
const revoke = (auth: Auth, runnerId: string, tokenId: string) =>
  server.fetch(`/v1/runner/${runnerId}/agent-token/${tokenId}`, { method: "DELETE", headers: auth })
const verify = (token: string) => server.run(Effect.flatMap(AgentTokens, (t) => t.verify(token)))
const isLive = (tokenId: string) => server.run(Effect.flatMap(AgentTokens, (t) => t.isLive(tokenId)))

describe("agent runners", () => {
  it("registers without an endpoint and without a probe: a placeholder endpoint that never resolves", async () => {
    const u = await server.user()
    const r = await agentRunner(u.auth)
    expect(r).toMatchObject({ connection: "agent", endpoint: "http://agent.invalid", comfyui: null, status: "active" })
    // The test gateway's probe refuses this endpoint: an agent runner given it is not probed.
    const labelled = await createRunner(u.auth, { name: "labelled", connection: "agent", endpoint: "http://unreachable.example:8188" })
    expect([labelled.status, (await readJson<RunnerJson>(labelled)).endpoint]).toEqual([201, "http://unreachable.example:8188"])
    expect((await readJson<RunnerJson>(await server.fetch(`/v1/runner/${r.id}`, { headers: u.auth }))).connection).toBe("agent")
  })

  it("keeps the contract for direct runners: connection direct by default, endpoint required and probed", async () => {
    const u = await server.user()
    const direct = await readJson<RunnerJson>(await createRunner(u.auth, { name: "box", endpoint: "http://127.0.0.1:8188" }))
    expect(direct.connection).toBe("direct")
    const missing = await createRunner(u.auth, { name: "box" })
    const body = await readJson<ErrorBody>(missing)
    expect([missing.status, body.details?.map((d) => d.field)]).toEqual([400, ["endpoint"]])
    expect((await createRunner(u.auth, { name: "box", connection: "direct", endpoint: "http://unreachable.example" })).status).toBe(400)
    expect((await createRunner(u.auth, { name: "box", connection: "tunnel", endpoint: "http://127.0.0.1:8188" })).status).toBe(400)
  })

  it("cannot change its connection; a new endpoint for an agent runner is not probed", async () => {
    const u = await server.user()
    const r = await agentRunner(u.auth)
    const patch = (body: unknown) => server.fetch(`/v1/runner/${r.id}`, { ...json(body, u.auth), method: "PATCH" })
    expect((await patch({ connection: "direct" })).status).toBe(400)
    const moved = await patch({ endpoint: "http://unreachable.example:8188" })
    expect([moved.status, (await readJson<RunnerJson>(moved)).connection]).toEqual([200, "agent"])
  })

  it("counts against the tier's runner limit like any runner", async () => {
    const u = await server.user()
    await agentRunner(u.auth, "one")
    await agentRunner(u.auth, "two")
    const third = await createRunner(u.auth, { name: "three", connection: "agent" })
    expect([third.status, (await readJson<ErrorBody>(third)).message]).toEqual([403, expect.stringContaining("Runner limit exceeded")])
  })
})

describe("runner tokens", () => {
  it("are created by the owner and shown once; the list never shows a value", async () => {
    const u = await server.user()
    const r = await agentRunner(u.auth)
    const res = await newToken(u.auth, r.id)
    const issued = await readJson<IssuedJson>(res)
    expect(res.status).toBe(201)
    expect(Object.keys(issued).sort()).toEqual(["created_at", "id", "runner_id", "token"])
    expect(issued.token).toMatch(/^wes_rt_[0-9A-Za-z]{42}$/)
    expect(issued.runner_id).toBe(r.id)
    const listed = await listTokens(u.auth, r.id)
    expect(listed).toEqual([{ id: issued.id, created_at: issued.created_at, last_used_at: null, revoked_at: null }])
    // A client that sends an empty JSON object as the body is answered the same.
    expect((await server.fetch(`/v1/runner/${r.id}/agent-token`, json({}, u.auth))).status).toBe(201)
    const everything = JSON.stringify(listed) + JSON.stringify(await readJson(await server.fetch(`/v1/runner/${r.id}`, { headers: u.auth })))
    expect(everything).not.toContain(issued.token)
  })

  it("are someone else's runner's: 404, as the runner is", async () => {
    const owner = await server.user()
    const other = await server.user()
    const r = await agentRunner(owner.auth)
    const issued = await readJson<IssuedJson>(await newToken(owner.auth, r.id))
    expect((await newToken(other.auth, r.id)).status).toBe(404)
    expect((await server.fetch(`/v1/runner/${r.id}/agent-tokens`, { headers: other.auth })).status).toBe(404)
    expect((await revoke(other.auth, r.id, issued.id)).status).toBe(404)
    expect((await newToken(owner.auth, "not-a-uuid")).status).toBe(404)
    expect(Option.isSome(await verify(issued.token))).toBe(true)
  })

  it("are for agent runners only: 409 for a direct runner, saying why", async () => {
    const u = await server.user()
    const direct = await readJson<RunnerJson>(await createRunner(u.auth, { name: "box", endpoint: "http://127.0.0.1:8188" }))
    const res = await newToken(u.auth, direct.id)
    const body = await readJson<ErrorBody>(res)
    expect([res.status, body.message]).toEqual([409, expect.stringContaining("Runner tokens are for agent runners")])
  })

  it("are at most 10 live per runner; a revoked one frees its place", async () => {
    const u = await server.user()
    const r = await agentRunner(u.auth)
    const issued: Array<IssuedJson> = []
    for (let i = 0; i < 10; i++) issued.push(await readJson<IssuedJson>(await newToken(u.auth, r.id)))
    const eleventh = await newToken(u.auth, r.id)
    expect([eleventh.status, (await readJson<ErrorBody>(eleventh)).message]).toEqual([409, expect.stringContaining("10 live tokens")])
    expect((await revoke(u.auth, r.id, issued[0]!.id)).status).toBe(204)
    expect((await newToken(u.auth, r.id)).status).toBe(201)
  })

  it("verify to their runner and owner, and record the use; a wrong token verifies to nothing", async () => {
    const u = await server.user()
    const r = await agentRunner(u.auth)
    const issued = await readJson<IssuedJson>(await newToken(u.auth, r.id))
    expect(await verify(issued.token)).toEqual(Option.some({ token_id: issued.id, runner_id: r.id, user_id: u.id }))
    expect(await isLive(issued.id)).toBe(true)
    const [listed] = await listTokens(u.auth, r.id)
    expect(listed!.last_used_at).not.toBeNull()
    // One character changed: the checksum fails. A well-formed token never issued: not stored.
    const typo = issued.token.slice(0, -1) + (issued.token.endsWith("0") ? "1" : "0")
    const neverIssued = await Effect.runPromise(generateRunnerToken.pipe(Effect.provide(PlatformLive)))
    for (const wrong of [typo, neverIssued, "", "wes_rt_", u.token, issued.token + "x", issued.token.replace("wes_rt_", "wes_")]) {
      expect([wrong, Option.isNone(await verify(wrong))]).toEqual([wrong, true])
    }
    expect(await isLive("not-a-uuid")).toBe(false)
  })

  it("revoked: 204 (again too), listed with revoked_at, no longer verify nor live; an unknown token is 404", async () => {
    const u = await server.user()
    const r = await agentRunner(u.auth)
    const issued = await readJson<IssuedJson>(await newToken(u.auth, r.id))
    expect((await revoke(u.auth, r.id, issued.id)).status).toBe(204)
    const [listed] = await listTokens(u.auth, r.id)
    expect(listed!.revoked_at).not.toBeNull()
    expect((await revoke(u.auth, r.id, issued.id)).status).toBe(204)
    expect((await listTokens(u.auth, r.id))[0]!.revoked_at).toBe(listed!.revoked_at)
    expect(Option.isNone(await verify(issued.token))).toBe(true)
    expect(await isLive(issued.id)).toBe(false)
    const unknown = await revoke(u.auth, r.id, "018f0000-0000-7000-8000-000000000000")
    expect([unknown.status, (await readJson<ErrorBody>(unknown)).message]).toEqual([404, "Token not found"])
  })

  it("go with their runner: a deleted runner's token neither verifies nor is live", async () => {
    const u = await server.user()
    const r = await agentRunner(u.auth)
    const issued = await readJson<IssuedJson>(await newToken(u.auth, r.id))
    expect((await server.fetch(`/v1/runner/${r.id}`, { method: "DELETE", headers: u.auth })).status).toBe(204)
    expect(Option.isNone(await verify(issued.token))).toBe(true)
    expect(await isLive(issued.id)).toBe(false)
  })

  it("cannot call /v1: a runner token is 401 Invalid token on every route", async () => {
    const u = await server.user()
    const r = await agentRunner(u.auth)
    const issued = await readJson<IssuedJson>(await newToken(u.auth, r.id))
    const asAgent = { authorization: `Bearer ${issued.token}` }
    for (const path of ["/v1/user", "/v1/runner", `/v1/runner/${r.id}`, `/v1/runner/${r.id}/agent-tokens`, "/v1/workflow"]) {
      const res = await server.fetch(path, { headers: asAgent })
      expect([path, res.status, (await readJson<ErrorBody>(res)).message]).toEqual([path, 401, "Invalid token"])
    }
    expect((await newToken(asAgent, r.id)).status).toBe(401)
    expect(Option.isSome(await verify(issued.token))).toBe(true)
  })

  it("work through the typed client", async () => {
    const u = await server.user()
    const program = Effect.gen(function*() {
      const client = yield* makeClient({ baseUrl: server.url, token: u.token })
      const r = yield* client.runners.create({ payload: { name: "typed", connection: "agent" } })
      const issued = yield* client.runners.createAgentToken({ params: { id: r.id } })
      const listed = yield* client.runners.listAgentTokens({ params: { id: r.id } })
      yield* client.runners.revokeAgentToken({ params: { id: r.id, token_id: issued.id } })
      const after = yield* client.runners.listAgentTokens({ params: { id: r.id } })
      return { r, issued, listed, after }
    })
    const { after, issued, listed, r } = await Effect.runPromise(program.pipe(Effect.provide(FetchHttpClient.layer)))
    expect([r.connection, issued.runner_id, listed.map((t) => t.id)]).toEqual(["agent", r.id, [issued.id]])
    expect(after[0]!.revoked_at).not.toBeNull()
  })
})
