/**
 * The agent's connection to WES: it comes back after a drop, says clearly when its token is
 * refused or revoked (and keeps trying), notices a WES that stopped answering, and holds one
 * connection at a time.
 */
import { CLOSE_REPLACED, CLOSE_SHUTDOWN, CLOSE_TOKEN_REVOKED } from "@wes/runner-client/agent-protocol"
import { connectUrl, nextDelay } from "@wes/runner-agent"
import { FakeComfyUI } from "@wes/runner-client/testing"
import { afterEach, describe, expect, it } from "vitest"
import { getThroughTunnel, runAgent, startWes, waitFor } from "./harness.js"

const fakes: Array<FakeComfyUI> = []
afterEach(async () => {
  await Promise.all(fakes.splice(0).map((f) => f.close()))
})
const comfy = async () => {
  const fake = await FakeComfyUI.start()
  fakes.push(fake)
  return fake.url
}

const openCount = (wes: { connections: Array<{ ws: { readyState: number } }> }) =>
  wes.connections.filter((c) => c.ws.readyState === 1).length

describe("the connection to WES", () => {
  it("is dialled again after WES drops it, and works again", async () => {
    const wes = await startWes()
    const agent = await runAgent(wes, await comfy())
    const first = await wes.connection()
    first.ws.terminate()
    await waitFor(() => wes.connections.length === 2 && openCount(wes) === 1, "a second connection")
    const second = await wes.connection()
    expect((await getThroughTunnel(second.session, "/system_stats")).status).toBe(200)
    expect(agent.connected()).toBe(true)
    expect(agent.lines.some((l) => l.startsWith("warn the connection to WES closed (code 1006"))).toBe(true)
  })

  it("says the token was refused on a 401 and keeps trying", async () => {
    const wes = await startWes()
    wes.refuseNext(2)
    const agent = await runAgent(wes, await comfy())
    await wes.connection()
    expect(wes.refused()).toBe(2)
    const refusals = agent.lines.filter((l) => l.includes("the runner token was refused") && l.includes("wrong or revoked"))
    expect(refusals).toHaveLength(2)
    expect(openCount(wes)).toBe(1)
  })

  it("redials at once when WES shuts its connection down (CLOSE_SHUTDOWN)", async () => {
    const wes = await startWes()
    const agent = await runAgent(wes, await comfy(), { backoff: { initialMs: 50, maxMs: 30_000, stableMs: 60_000 } })
    // Drops first, so the backoff has grown: a plain drop would now wait at least 1.6 s.
    for (let i = 0; i < 6; i++) {
      await waitFor(() => agent.connected(), "the agent to connect", 20_000)
      wes.connections.at(-1)!.ws.terminate()
      await waitFor(() => !agent.connected(), "the agent to see the drop")
    }
    await waitFor(() => agent.connected(), "the agent to connect", 20_000)
    const n = wes.connections.length
    const start = Date.now()
    wes.connections.at(-1)!.ws.close(CLOSE_SHUTDOWN, "shutting down")
    await waitFor(() => wes.connections.length > n && agent.connected(), "a redial after the shutdown")
    expect(Date.now() - start).toBeLessThan(1_000)
    expect(agent.lines).toContain("info WES is shutting down this connection; reconnecting")
  }, 60_000)

  it("says the token was revoked when WES closes with CLOSE_TOKEN_REVOKED, and when replaced", async () => {
    const wes = await startWes()
    const agent = await runAgent(wes, await comfy())
    ;(await wes.connection()).ws.close(CLOSE_TOKEN_REVOKED, "token revoked")
    await waitFor(() => wes.connections.length === 2 && openCount(wes) === 1, "the agent to reconnect")
    expect(agent.lines).toContain("error WES closed the connection: the runner token was revoked (token revoked)")
    ;(await wes.connection()).ws.close(CLOSE_REPLACED)
    await waitFor(() => agent.lines.some((l) => l.includes("another agent connected with this runner's token")), "the log line")
  })

  it("drops and redials a connection whose pings go unanswered", async () => {
    const wes = await startWes()
    wes.answerPings = false
    const agent = await runAgent(wes, await comfy(), { heartbeatMs: 50 })
    await wes.connection()
    await waitFor(() => wes.connections.length >= 2, "a new connection after the silent one")
    expect(agent.lines.some((l) => l.includes("did not answer a ping or send anything within 50 ms"))).toBe(true)
    wes.answerPings = true
  })

  it("keeps dialling while WES is unreachable", async () => {
    const wes = await startWes()
    await wes.close()
    const agent = await runAgent(wes, await comfy())
    await waitFor(() => agent.lines.filter((l) => l.includes("cannot reach WES")).length >= 2, "failed attempts")
    expect(agent.connected()).toBe(false)
  })

  it("sends frames with a zero mask to a loopback WES (masking skipped on both ends)", async () => {
    const wes = await startWes()
    await runAgent(wes, await comfy())
    const { raw } = await wes.connection()
    await waitFor(() => raw.length > 0, "the agent's first frame")
    const frame = Buffer.concat(raw)
    expect(frame[1]! & 0x80).toBe(0x80)
    const length = frame[1]! & 0x7f
    const maskAt = length < 126 ? 2 : length === 126 ? 4 : 10
    expect([...frame.subarray(maskAt, maskAt + 4)]).toEqual([0, 0, 0, 0])
  })

  it("stops dialling on close", async () => {
    const wes = await startWes()
    const agent = await runAgent(wes, await comfy())
    const { ws } = await wes.connection()
    await agent.close()
    await waitFor(() => ws.readyState === 3, "the connection to close")
    expect(wes.connections).toHaveLength(1)
    expect(agent.connected()).toBe(false)
  })
})

describe("dialling", () => {
  it("turns the server URL into the connect URL", () => {
    expect(connectUrl(new URL("https://wes.example.com"))).toBe("wss://wes.example.com/agent/v1/connect")
    expect(connectUrl(new URL("http://127.0.0.1:8080/base"))).toBe("ws://127.0.0.1:8080/base/agent/v1/connect")
  })

  it("backs off exponentially with jitter up to the maximum", () => {
    const settings = { initialMs: 500, maxMs: 30_000, stableMs: 30_000 }
    expect(nextDelay(settings, 0, () => 0)).toBe(250)
    expect(nextDelay(settings, 0, () => 1)).toBe(500)
    expect(nextDelay(settings, 3, () => 1)).toBe(4000)
    expect(nextDelay(settings, 20, () => 1)).toBe(30_000)
    expect(nextDelay(settings, 20, () => 0)).toBe(15_000)
  })
})
