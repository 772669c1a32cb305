/**
 * Webhooks (issue 16), black-box on the memory store: a real receiver (node:http) gets signed
 * Standard Webhooks deliveries of status changes; retries on 5xx and timeouts with growing gaps,
 * none on 410; the delivery log; a manual re-send; a per-workflow URL; secret rotation.
 */
import { FakeComfyUI, rebindingResolver, saveImageWorkflow, standInDenied, twoAddressServer } from "@wes/runner-client/testing"
import { createHmac } from "node:crypto"
import { Webhook } from "standardwebhooks"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { verifyWebhook } from "../src/WebhookSigning.js"
import { fastDispatch, json, readJson, startServer, type TestServer, workflowForm, type WorkflowSummaryJson } from "./harness.js"
import { poll } from "./polling.js"
import { type Receiver, startReceiver } from "./webhook-receiver.js"

interface WebhookJson {
  readonly url: string
  readonly secret: string
  readonly previous_secret_expires_at: string | null
}
interface AttemptJson {
  readonly at: string
  readonly status_code: number | null
  readonly error: string | null
  readonly next_attempt_at: string | null
}
interface DeliveryJson {
  readonly id: string
  readonly type: string
  readonly url: string
  readonly status: "pending" | "delivered" | "failed"
  readonly next_attempt_at: string | null
  readonly attempts: ReadonlyArray<AttemptJson>
}

const webhooks = { timeout: "400 millis", denyPrivate: false, retry: { base: "150 millis", cap: "2 seconds" }, pollInterval: "20 millis" } as const

/** No dispatcher: workflows stay `accepted` until cancelled. */
let server: TestServer
const receivers: Array<Receiver> = []
const fakes: Array<FakeComfyUI> = []

beforeAll(async () => {
  server = await startServer({ webhooks })
})
afterAll(async () => { await server.close() })
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((r) => r.close()))
  await Promise.all(fakes.splice(0).map((f) => f.close()))
})

type User = Awaited<ReturnType<TestServer["user"]>>

const receiver = async () => {
  const r = await startReceiver()
  receivers.push(r)
  return r
}

const putWebhook = async (u: User, url: string) => {
  const res = await server.fetch("/v1/webhook", { ...json({ url }, u.auth), method: "PUT" })
  expect(res.status).toBe(200)
  return readJson<WebhookJson>(res)
}

/** A workflow that stays `accepted` (no runner answers it), ended by cancelling it: one `workflow.cancelled` delivery. */
const createAndCancel = async (u: User, fields: Record<string, string> = {}) => {
  const runner = await server.fetch("/v1/runner", json({ name: "idle", endpoint: "http://runner.example:8188" }, u.auth))
  expect(runner.status).toBe(201)
  return createThenCancel(u, fields)
}

const createThenCancel = async (u: User, fields: Record<string, string> = {}) => {
  const created = await server.fetch("/v1/workflow", { method: "POST", headers: u.auth, body: workflowForm({ name: "hooked", ...fields }) })
  expect(created.status).toBe(201)
  const w = await readJson<WorkflowSummaryJson>(created)
  const cancelled = await server.fetch(`/v1/workflow/${w.id}/cancel`, { method: "POST", headers: u.auth })
  expect(cancelled.status).toBe(200)
  return w
}

const deliveries = async (u: User, id: string, on: TestServer = server) => {
  const res = await on.fetch(`/v1/workflow/${id}/deliveries`, { headers: u.auth })
  expect(res.status).toBe(200)
  return (await readJson<{ deliveries: ReadonlyArray<DeliveryJson> }>(res)).deliveries
}

/** Polls the delivery log of `server` until `done` holds for it. */
const logUntil = (u: User, id: string, done: (ds: ReadonlyArray<DeliveryJson>) => boolean, on: TestServer = server) => {
  let last: ReadonlyArray<DeliveryJson> = []
  return poll(() => `the delivery log to match; it is ${JSON.stringify(last)}`, async () => {
    last = await deliveries(u, id, on)
    return done(last) ? last : undefined
  })
}

describe("the webhook endpoint", () => {
  it("PUT makes a whsec_ secret shown once; GET masks it; a URL change keeps it; DELETE removes it", async () => {
    const u = await server.user()
    expect((await server.fetch("/v1/webhook", { headers: u.auth })).status).toBe(404)
    const created = await putWebhook(u, "http://127.0.0.1:9/a")
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
    const shown = await readJson<WebhookJson>(await server.fetch("/v1/webhook", { headers: u.auth }))
    expect(shown.url).toBe("http://127.0.0.1:9/a")
    expect(shown.secret).not.toBe(created.secret)
    expect(shown.secret).toContain("...")
    const moved = await putWebhook(u, "http://127.0.0.1:9/b")
    expect(moved.url).toBe("http://127.0.0.1:9/b")
    expect(moved.secret).toBe(shown.secret)
    expect((await server.fetch("/v1/webhook", { method: "DELETE", headers: u.auth })).status).toBe(204)
    expect((await server.fetch("/v1/webhook", { headers: u.auth })).status).toBe(404)
  })

  it("refuses a URL that is not http(s), and a workflow webhook_url without a secret set up", async () => {
    const u = await server.user()
    const bad = await server.fetch("/v1/webhook", { ...json({ url: "ftp://example.com/x" }, u.auth), method: "PUT" })
    expect(bad.status).toBe(400)
    await server.fetch("/v1/runner", json({ name: "idle", endpoint: "http://runner.example:8188" }, u.auth))
    const res = await server.fetch("/v1/workflow", {
      method: "POST",
      headers: u.auth,
      body: workflowForm({ name: "x", webhook_url: "http://127.0.0.1:9/x" })
    })
    expect(res.status).toBe(400)
    expect(await res.text()).toContain("PUT /v1/webhook")
  })

  it("refuses loopback and private URLs unless allowed (WES_WEBHOOK_ALLOW_PRIVATE)", async () => {
    const strict = await startServer()
    try {
      const u = await strict.user()
      for (const url of ["http://127.0.0.1:8080/x", "http://10.0.0.5/x", "http://[::1]/x", "http://169.254.169.254/latest"]) {
        const res = await strict.fetch("/v1/webhook", { ...json({ url }, u.auth), method: "PUT" })
        expect(res.status, url).toBe(400)
        expect(await res.text()).toContain("WES_WEBHOOK_ALLOW_PRIVATE")
      }
    } finally {
      await strict.close()
    }
  })
})

describe("the address policy at send time", () => {
  it("a host that resolved to a public address at PUT but to a private one later fails its delivery without retry", async () => {
    let answer = "93.184.216.34"
    const resolve = async () => [answer]
    const strict = await startServer({
      http: { webhooks: { allowPrivate: false, resolve } },
      webhooks: { ...webhooks, denyPrivate: true, resolve }
    })
    try {
      const u = await strict.user()
      const put = await strict.fetch("/v1/webhook", { ...json({ url: "http://hooks.example.com/x" }, u.auth), method: "PUT" })
      expect(put.status).toBe(200)
      answer = "10.1.2.3"
      await strict.fetch("/v1/runner", json({ name: "idle", endpoint: "http://runner.example:8188" }, u.auth))
      const created = await strict.fetch("/v1/workflow", { method: "POST", headers: u.auth, body: workflowForm({ name: "x" }) })
      const w = await readJson<WorkflowSummaryJson>(created)
      await strict.fetch(`/v1/workflow/${w.id}/cancel`, { method: "POST", headers: u.auth })
      const ds = await logUntil(u, w.id, (log) => log[0]?.status === "failed", strict)
      expect(ds[0]!.attempts).toHaveLength(1)
      expect(ds[0]!.attempts[0]!.status_code).toBeNull()
      expect(ds[0]!.attempts[0]!.error).toContain("WES_WEBHOOK_ALLOW_PRIVATE")
    } finally {
      await strict.close()
    }
  })
})

describe("the guarded connection at send time (DNS rebinding, issue 33)", () => {
  it("a name answering public then private: the first delivery reaches the checked address, the next is refused and nothing reaches the private server", async () => {
    const hooks = await twoAddressServer((_req, res) => res.end("ok"))
    // The PUT check sees a public address; each delivery's connection resolves the name once.
    const sendResolve = rebindingResolver(["127.0.0.2"], ["127.0.0.1"])
    const strict = await startServer({
      http: { webhooks: { allowPrivate: false, resolve: async () => ["93.184.216.34"] } },
      webhooks: { ...webhooks, denyPrivate: true, resolve: sendResolve, denied: standInDenied }
    })
    try {
      const u = await strict.user()
      const put = await strict.fetch("/v1/webhook", { ...json({ url: `http://localhost:${hooks.port}/hook` }, u.auth), method: "PUT" })
      expect(put.status).toBe(200)
      await strict.fetch("/v1/runner", json({ name: "idle", endpoint: "http://runner.example:8188" }, u.auth))
      const cancelled = async () => {
        const w = await readJson<WorkflowSummaryJson>(await strict.fetch("/v1/workflow", { method: "POST", headers: u.auth, body: workflowForm({ name: "x" }) }))
        await strict.fetch(`/v1/workflow/${w.id}/cancel`, { method: "POST", headers: u.auth })
        return w.id
      }
      const first = await logUntil(u, await cancelled(), (log) => log[0]?.status === "delivered", strict)
      expect(first[0]!.attempts[0]!.status_code).toBe(200)
      const second = await logUntil(u, await cancelled(), (log) => log[0]?.status === "failed", strict)
      expect(second[0]!.attempts).toHaveLength(1)
      expect(second[0]!.attempts[0]!.error).toContain("WES_WEBHOOK_ALLOW_PRIVATE")
      expect([hooks.publicHits(), hooks.privateHits()]).toEqual([1, 0])
      expect(sendResolve.calls()).toBe(2)
    } finally {
      await strict.close()
      await hooks.close()
    }
  })
})

describe("deliveries", () => {
  it("are signed per Standard Webhooks: verified with the secret (by verifyWebhook, the reference library and a plain HMAC), rejected with another", async () => {
    const u = await server.user()
    const r = await receiver()
    const { secret } = await putWebhook(u, r.url)
    const w = await createAndCancel(u)
    const [got] = await r.until((rs) => rs.length >= 1)
    const { body, headers } = got!
    const event = verifyWebhook(secret, body, headers)
    expect(event.type).toBe("workflow.cancelled")
    expect(event.data.id).toBe(w.id)
    expect(event.data.status).toBe("cancelled")
    expect(headers["webhook-id"]).toMatch(/^[0-9a-f-]{36}$/)
    expect(new Webhook(secret).verify(body, headers)).toEqual(event)
    const key = Buffer.from(secret.slice("whsec_".length), "base64")
    const expected = createHmac("sha256", key).update(`${headers["webhook-id"]}.${headers["webhook-timestamp"]}.${body}`).digest("base64")
    expect(headers["webhook-signature"]).toBe(`v1,${expected}`)
    const other = `whsec_${Buffer.alloc(32, 7).toString("base64")}`
    expect(() => verifyWebhook(other, body, headers)).toThrow()
    expect(() => verifyWebhook(secret, body.replace("cancelled", "completed"), headers)).toThrow()
    const [d] = await logUntil(u, w.id, (ds) => ds[0]?.status === "delivered")
    expect(d).toMatchObject({ id: headers["webhook-id"], type: "workflow.cancelled", url: r.url, status: "delivered", next_attempt_at: null })
    expect(d!.attempts.map((a) => a.status_code)).toEqual([200])
  })

  it("a receiver answering 500 twice then 200 gets three attempts of one webhook-id, with growing gaps", async () => {
    const u = await server.user()
    const r = await receiver()
    r.answer = (_, i) => (i < 2 ? 500 : 200)
    await putWebhook(u, r.url)
    const w = await createAndCancel(u)
    const got = await r.until((rs) => rs.length >= 3)
    expect(new Set(got.map((g) => g.headers["webhook-id"])).size).toBe(1)
    const [d] = await logUntil(u, w.id, (ds) => ds[0]?.status === "delivered")
    expect(d!.attempts.map((a) => a.status_code)).toEqual([500, 500, 200])
    expect(d!.attempts[0]!.error).toMatch(/^HTTP 500: error body x+$/)
    // At most 256 bytes of the receiver's 5 KB body are kept.
    expect(d!.attempts[0]!.error!.length).toBeLessThanOrEqual("HTTP 500: ".length + 256)
    const gap = (a: AttemptJson) => Date.parse(a.next_attempt_at!) - Date.parse(a.at)
    expect(gap(d!.attempts[1]!)).toBeGreaterThan(gap(d!.attempts[0]!))
    expect(d!.attempts[2]!.next_attempt_at).toBeNull()
    // Counted at /metrics (the registry is the process's: other tests add to it too).
    const metrics = await (await server.fetch("/metrics")).text()
    expect(metrics).toMatch(/^wes_webhook_attempts_total\{result="5xx"\} [1-9]/m)
    expect(metrics).toMatch(/^wes_webhook_deliveries_total\{outcome="delivered"\} [1-9]/m)
    expect(metrics).toMatch(/^wes_webhook_delivery_seconds_count [1-9]/m)
    // Each retry came no earlier than it was scheduled.
    expect(Date.parse(d!.attempts[1]!.at)).toBeGreaterThanOrEqual(Date.parse(d!.attempts[0]!.next_attempt_at!))
    expect(Date.parse(d!.attempts[2]!.at)).toBeGreaterThanOrEqual(Date.parse(d!.attempts[1]!.next_attempt_at!))
  })

  it("a receiver that does not answer in time gets the attempt recorded as a timeout and another attempt", async () => {
    const u = await server.user()
    const r = await receiver()
    r.answer = (_, i) => (i === 0 ? "hang" : 200)
    await putWebhook(u, r.url)
    const w = await createAndCancel(u)
    const [d] = await logUntil(u, w.id, (ds) => ds[0]?.status === "delivered")
    expect(d!.attempts.map((a) => a.status_code)).toEqual([null, 200])
    expect(d!.attempts[0]!.error).toBe("no answer within 400 ms")
    expect(r.received).toHaveLength(2)
  })

  it("a receiver answering 410 is not retried: the delivery fails at once; a manual retry sends it again", async () => {
    const u = await server.user()
    const r = await receiver()
    r.answer = (_, i) => (i === 0 ? 410 : 200)
    await putWebhook(u, r.url)
    const w = await createAndCancel(u)
    const [failed] = await logUntil(u, w.id, (ds) => ds[0]?.status === "failed")
    expect(failed!.attempts.map((a) => a.status_code)).toEqual([410])
    expect(failed!.next_attempt_at).toBeNull()
    expect(failed!.attempts[0]!.next_attempt_at).toBeNull()
    expect(r.received).toHaveLength(1)
    const retried = await server.fetch(`/v1/workflow/${w.id}/deliveries/${failed!.id}/retry`, { method: "POST", headers: u.auth })
    expect(retried.status).toBe(200)
    const [d] = await logUntil(u, w.id, (ds) => ds[0]?.status === "delivered")
    expect(d!.attempts.map((a) => a.status_code)).toEqual([410, 200])
    expect(r.received.map((g) => g.headers["webhook-id"])).toEqual([failed!.id, failed!.id])
    const other = await server.user()
    const foreign = await server.fetch(`/v1/workflow/${w.id}/deliveries/${failed!.id}/retry`, { method: "POST", headers: other.auth })
    expect(foreign.status).toBe(404)
    expect((await server.fetch(`/v1/workflow/${w.id}/deliveries`, { headers: other.auth })).status).toBe(404)
  })

  it("a workflow's webhook_url overrides the default endpoint (signed with the same secret); a rerun keeps it", async () => {
    const u = await server.user()
    const byDefault = await receiver()
    const own = await receiver()
    const { secret } = await putWebhook(u, byDefault.url)
    const w = await createAndCancel(u, { webhook_url: own.url })
    const detail = await readJson<{ webhook_url: string | null }>(await server.fetch(`/v1/workflow/${w.id}`, { headers: u.auth }))
    expect(detail.webhook_url).toBe(own.url)
    const [got] = await own.until((rs) => rs.length >= 1)
    expect(verifyWebhook(secret, got!.body, got!.headers).data.id).toBe(w.id)
    const rerun = await server.fetch(`/v1/workflow/${w.id}/rerun`, { method: "POST", headers: u.auth, body: new FormData() })
    expect(rerun.status).toBe(201)
    const again = await readJson<WorkflowSummaryJson>(rerun)
    await server.fetch(`/v1/workflow/${again.id}/cancel`, { method: "POST", headers: u.auth })
    const both = await own.until((rs) => rs.length >= 2)
    expect(verifyWebhook(secret, both[1]!.body, both[1]!.headers).data.id).toBe(again.id)
    expect(byDefault.received).toHaveLength(0)
  })

  it("after a secret rotation, deliveries carry two signatures: the new secret and the old one both verify", async () => {
    const u = await server.user()
    const r = await receiver()
    const { secret: old } = await putWebhook(u, r.url)
    const rotated = await server.fetch("/v1/webhook/rotate-secret", { method: "POST", headers: u.auth })
    expect(rotated.status).toBe(200)
    const { previous_secret_expires_at, secret } = await readJson<WebhookJson>(rotated)
    expect(secret).not.toBe(old)
    const hours = (Date.parse(previous_secret_expires_at!) - Date.now()) / 3_600_000
    expect(hours).toBeGreaterThan(23.9)
    expect(hours).toBeLessThanOrEqual(24)
    await createAndCancel(u)
    const [got] = await r.until((rs) => rs.length >= 1)
    expect(got!.headers["webhook-signature"]!.split(" ")).toHaveLength(2)
    expect(verifyWebhook(secret, got!.body, got!.headers).type).toBe("workflow.cancelled")
    expect(verifyWebhook(old, got!.body, got!.headers).type).toBe("workflow.cancelled")
  })

  it("a workflow that runs announces queued, running and completed, in that order; never progress", async () => {
    const running = await startServer({ dispatcher: fastDispatch, webhooks })
    try {
      const u = await running.user()
      const r = await receiver()
      const put = await running.fetch("/v1/webhook", { ...json({ url: r.url }, u.auth), method: "PUT" })
      const { secret } = await readJson<WebhookJson>(put)
      const fake = await FakeComfyUI.start()
      fakes.push(fake)
      expect((await running.fetch("/v1/runner", json({ name: "real", endpoint: fake.url }, u.auth))).status).toBe(201)
      const body = workflowForm({ name: "runs" }, saveImageWorkflow())
      expect((await running.fetch("/v1/workflow", { method: "POST", headers: u.auth, body })).status).toBe(201)
      const got = await r.until((rs) => rs.some((g) => g.body.includes("workflow.completed")))
      expect(got.map((g) => verifyWebhook(secret, g.body, g.headers).type)).toEqual(["workflow.queued", "workflow.running", "workflow.completed"])
    } finally {
      await running.close()
    }
  })
})
