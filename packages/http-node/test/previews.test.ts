/**
 * Live previews end to end: a fake ComfyUI whose progress steps send preview frames (as a
 * sampler's do), the dispatcher and the real runner client, and `GET /v1/workflow/{id}/subscribe`
 * with and without `?previews=true`; and on PostgreSQL, a subscriber on another instance.
 */
import { FakeComfyUI, slowWorkflow } from "@wes/runner-client/testing"
import { PgStoreLive } from "@wes/storage-pg"
import * as Redacted from "effect/Redacted"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { fastDispatch, json, readJson, startServer, type TestServer, workflowForm, type WorkflowSummaryJson } from "./harness.js"
import { TestDatabase } from "./instances.js"
import { blocks } from "./sse-blocks.js"

let server: TestServer
let fake: FakeComfyUI
beforeAll(async () => {
  server = await startServer({ dispatcher: fastDispatch })
  fake = await FakeComfyUI.start({ previews: true })
})
afterAll(async () => {
  await server.close()
  await fake.close()
})


const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47])

describe("live previews", () => {
  const setup = async (workflow: unknown) => {
    const u = await server.user("pro")
    expect((await server.fetch("/v1/runner", json({ name: "r", endpoint: fake.url }, u.auth))).status).toBe(201)
    const w = await readJson<WorkflowSummaryJson>(await server.fetch("/v1/workflow", { method: "POST", headers: u.auth, body: workflowForm({ name: "p" }, workflow) }))
    const subscribe = (query: string) => server.fetch(`/v1/workflow/${w.id}/subscribe${query}`, { headers: { ...u.auth, "last-event-id": "0" } })
    return { u, w, subscribe }
  }

  it("a subscriber with previews=true gets the running node's preview images; one without gets none; a replay has none", async () => {
    const { subscribe } = await setup(slowWorkflow({ seconds: 1.5, steps: 6 }))
    const [withPreviews, without] = await Promise.all([subscribe("?previews=true"), subscribe("")])
    const [a, b] = await Promise.all([withPreviews.text(), without.text()])
    const previews = blocks(a).filter((e) => e.event === "preview")
    expect(previews.length).toBeGreaterThanOrEqual(1)
    expect(previews.length).toBeLessThanOrEqual(6)
    for (const p of previews) {
      expect(p.id).toBeUndefined()
      const data = JSON.parse(p.data!) as { node: string; content_type: string; image: string }
      expect(data).toMatchObject({ node: "2", content_type: "image/png" })
      expect(Buffer.from(data.image, "base64").subarray(0, 4)).toEqual(PNG)
    }
    // Everything else is the stream without previews, event for event.
    expect(blocks(a).filter((e) => e.event !== "preview")).toEqual(blocks(b))
    expect(blocks(b).every((e) => e.id !== undefined)).toBe(true)
    expect(blocks(b).at(-1)?.event).toBe("done")
    // Not logged: a replay of the finished workflow's stream has none.
    expect(blocks(await (await subscribe("?previews=true")).text()).filter((e) => e.event === "preview")).toEqual([])
  })

  it("200 preview frames sent in a burst reach the subscriber as a handful (at most 2 per second, latest wins)", async () => {
    const { subscribe } = await setup(slowWorkflow({ seconds: 0, steps: 200 }))
    const previews = blocks(await (await subscribe("?previews=true")).text()).filter((e) => e.event === "preview")
    expect(previews.length).toBeGreaterThanOrEqual(1)
    expect(previews.length).toBeLessThan(20)
  })

  it("refuses a previews value other than true or false", async () => {
    const { subscribe } = await setup(slowWorkflow({ seconds: 0, steps: 1 }))
    expect((await subscribe("?previews=yes")).status).toBe(400)
  })
})

describe("live previews across instances on PostgreSQL", () => {
  let db: TestDatabase
  let driver: TestServer
  let other: TestServer
  beforeAll(async () => {
    db = await TestDatabase.create()
    const store = () => PgStoreLive({ url: Redacted.make(db.url()), maxConnections: 4 })
    // Only the first instance dispatches: the subscriber's instance never drives the run.
    ;[driver, other] = await Promise.all([startServer({ store: store(), dispatcher: fastDispatch }), startServer({ store: store() })])
  }, 60_000)
  afterAll(async () => {
    await Promise.all([driver.close(), other.close()])
    await db.drop()
  })

  it("a subscriber on an instance that does not drive the run gets its previews", async () => {
    const u = await driver.user("pro")
    expect((await driver.fetch("/v1/runner", json({ name: "r", endpoint: fake.url }, u.auth))).status).toBe(201)
    const w = await readJson<WorkflowSummaryJson>(
      await driver.fetch("/v1/workflow", { method: "POST", headers: u.auth, body: workflowForm({ name: "p" }, slowWorkflow({ seconds: 2, steps: 8 })) })
    )
    const res = await other.fetch(`/v1/workflow/${w.id}/subscribe?previews=true`, { headers: { ...u.auth, "last-event-id": "0" } })
    const events = blocks(await res.text())
    expect(events.at(-1)?.event).toBe("done")
    const previews = events.filter((e) => e.event === "preview")
    expect(previews.length).toBeGreaterThanOrEqual(1)
    expect(JSON.parse(previews[0]!.data!)).toMatchObject({ node: "2", content_type: "image/png" })
    // The run's row is gone with it.
    expect(await db.query((sql) => sql<{ n: number }>`SELECT count(*)::int AS n FROM workflow_previews`)).toEqual([{ n: 0 }])
  })
})
