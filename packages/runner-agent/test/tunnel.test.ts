/**
 * CONNECT through the agent: WES reaches the agent's ComfyUI (and nothing else), and a large
 * transfer is held by flow control instead of piling up in the agent's memory.
 */
import * as crypto from "node:crypto"
import * as http2 from "node:http2"
import * as net from "node:net"
import { FakeComfyUI } from "@wes/runner-client/testing"
import { afterEach, describe, expect, it } from "vitest"
import { WebSocket } from "ws"
import { connect, getThroughTunnel, runAgent, startWes, waitFor } from "./harness.js"

const fakes: Array<FakeComfyUI> = []
afterEach(async () => {
  await Promise.all(fakes.splice(0).map((f) => f.close()))
})

describe("CONNECT tunnels", () => {
  it("reach the agent's ComfyUI: GET /system_stats through a tunnel", async () => {
    const fake = await FakeComfyUI.start()
    fakes.push(fake)
    const wes = await startWes()
    await runAgent(wes, fake.url)
    const { session } = await wes.connection()
    const answer = await getThroughTunnel(session, "/system_stats")
    expect(answer.status).toBe(200)
    const stats = JSON.parse(answer.body) as { devices: Array<{ name: string }> }
    expect(stats.devices[0]?.name).toBe("cpu")
  })

  it("carry ComfyUI's WebSocket", async () => {
    const fake = await FakeComfyUI.start()
    fakes.push(fake)
    const wes = await startWes()
    await runAgent(wes, fake.url)
    const { session } = await wes.connection()
    const { stream } = await connect(session)
    const ws = new WebSocket("ws://127.0.0.1/ws?clientId=tunnelled", { createConnection: () => stream as unknown as net.Socket })
    const first = await new Promise<{ type: string }>((resolve, reject) => {
      ws.once("message", (data) => resolve(JSON.parse(String(data)) as { type: string }))
      ws.once("error", reject)
    })
    expect(first.type).toBe("status")
    ws.close()
  })

  it("close with ComfyUI's connection: a reset by WES, or the agent's connection lost, closes it", async () => {
    const open = new Set<net.Socket>()
    const comfy = net.createServer((s) => {
      open.add(s)
      s.on("error", () => undefined)
      s.once("close", () => open.delete(s))
    })
    await new Promise<void>((r) => comfy.listen(0, "127.0.0.1", r))
    const wes = await startWes()
    await runAgent(wes, `http://127.0.0.1:${(comfy.address() as net.AddressInfo).port}`)
    const first = await wes.connection()
    const a = await connect(first.session)
    await connect(first.session)
    await waitFor(() => open.size === 2, "two connections to ComfyUI")
    a.stream.close(http2.constants.NGHTTP2_CANCEL)
    await waitFor(() => open.size === 1, "the reset tunnel's connection to close")
    first.ws.terminate()
    await waitFor(() => open.size === 0, "the lost connection's tunnel to close")
    await new Promise((r) => comfy.close(r))
  })

  it("end WES's stream when ComfyUI closes its connection", async () => {
    const comfy = net.createServer((s) => s.end("bye"))
    await new Promise<void>((r) => comfy.listen(0, "127.0.0.1", r))
    const wes = await startWes()
    await runAgent(wes, `http://127.0.0.1:${(comfy.address() as net.AddressInfo).port}`)
    const { stream } = await connect((await wes.connection()).session)
    let text = ""
    stream.setEncoding("utf8")
    stream.on("data", (d: string) => (text += d))
    await new Promise((r) => stream.once("end", r))
    expect(text).toBe("bye")
    await new Promise((r) => comfy.close(r))
  })

  it("refuse any other authority with 403, without connecting anywhere", async () => {
    let reached = 0
    const elsewhere = net.createServer((s) => {
      reached++
      s.destroy()
    })
    await new Promise<void>((r) => elsewhere.listen(0, "127.0.0.1", r))
    const port = (elsewhere.address() as net.AddressInfo).port
    const fake = await FakeComfyUI.start()
    fakes.push(fake)
    const wes = await startWes()
    const agent = await runAgent(wes, fake.url)
    const { session } = await wes.connection()
    for (const authority of [`127.0.0.1:${port}`, "comfyui:8188", "example.com:443"]) {
      const { status, stream } = await connect(session, authority)
      expect(status).toBe(403)
      stream.destroy()
    }
    expect(reached).toBe(0)
    expect(agent.lines.some((l) => l.includes(`refused a CONNECT to "127.0.0.1:${port}"`))).toBe(true)
    await new Promise((r) => elsewhere.close(r))
  })

  it("answer 502 when ComfyUI is not listening", async () => {
    const closed = net.createServer()
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r))
    const port = (closed.address() as net.AddressInfo).port
    await new Promise((r) => closed.close(r))
    const wes = await startWes()
    await runAgent(wes, `http://127.0.0.1:${port}`)
    const { session } = await wes.connection()
    const { status } = await connect(session)
    expect(status).toBe(502)
  })

  it("hold a 64 MiB transfer to what WES reads (flow control), then deliver it intact", async () => {
    const TOTAL = 64 * 1024 * 1024
    const CHUNK = 256 * 1024
    let produced = 0
    const sent = crypto.createHash("sha256")
    // A ComfyUI stand-in that streams TOTAL bytes as fast as the agent takes them.
    const source = net.createServer((socket) => {
      const pump = () => {
        while (produced < TOTAL) {
          const chunk = crypto.randomBytes(CHUNK)
          sent.update(chunk)
          produced += CHUNK
          if (!socket.write(chunk)) return void socket.once("drain", pump)
        }
        socket.end()
      }
      pump()
    })
    await new Promise<void>((r) => source.listen(0, "127.0.0.1", r))
    const wes = await startWes()
    await runAgent(wes, `http://127.0.0.1:${(source.address() as net.AddressInfo).port}`)
    const { session } = await wes.connection()
    const before = process.memoryUsage()
    const { stream } = await connect(session)
    stream.pause()
    // WES reads nothing: the source is held once the windows and socket buffers are full.
    let last = -1
    let steady = 0
    await waitFor(() => {
      steady = produced === last ? steady + 1 : 0
      last = produced
      return steady >= 40
    }, "the source to be held back")
    expect(produced).toBeLessThan(TOTAL / 2)
    const held = process.memoryUsage()
    expect(held.arrayBuffers + held.heapUsed - before.arrayBuffers - before.heapUsed).toBeLessThan(TOTAL / 2)
    // Reading resumes: every byte arrives, in order.
    const received = crypto.createHash("sha256")
    let bytes = 0
    stream.on("data", (d: Buffer) => {
      received.update(d)
      bytes += d.length
    })
    stream.resume()
    await new Promise((r) => stream.once("end", r))
    expect(bytes).toBe(TOTAL)
    expect(received.digest("hex")).toBe(sent.digest("hex"))
    await new Promise((r) => source.close(r))
  }, 60_000)
})
