/**
 * The gateway reaching an agent runner (issue 34) through its agent's HTTP/2 session: every HTTP
 * call and the WebSocket go as CONNECT streams the agent pipes to its ComfyUI (a fake here), and
 * the runner's own endpoint is never connected to. The agent is a minimal one in the test: an
 * HTTP/2 server that answers CONNECT by connecting to the fake (helper agents in @wes/runner-agent
 * do the same, plus their own endpoints).
 */
import * as http2 from "node:http2"
import * as net from "node:net"
import { expect, layer } from "@effect/vitest"
import { isBlobBytes, type RunnerEvent, RunnerGateway, type RunnerTarget } from "@wes/core"
import { inputReference } from "@wes/core/testing"
import { AGENT_NOT_CONNECTED, type AgentSessions } from "@wes/runner-client"
import { COMFYUI_AUTHORITY } from "@wes/runner-client/agent-protocol"
import { FakeComfyUI, loadImageWorkflow, solidPng } from "@wes/runner-client/testing"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import { gatewayLayer, uuid } from "./harness.js"

/** The sessions the gateway reads: set by each test. */
const sessions = new Map<string, http2.ClientHttp2Session>()
const registry: AgentSessions = { session: (id) => sessions.get(id) }

/** A minimal agent for `comfyui` ("host:port"); counts the tunnels it opened; WES's session to it is registered for `runnerId`. */
const testAgent = (runnerId: string, comfyui: { host: string; port: number }) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const stats = { tunnels: 0, authorities: new Set<string>() }
      const server = http2.createServer()
      server.on("stream", (stream: http2.ServerHttp2Stream, headers) => {
        if (headers[":method"] !== "CONNECT") {
          stream.respond({ ":status": 404 })
          return stream.end()
        }
        stats.tunnels++
        stats.authorities.add(String(headers[":authority"]))
        const socket = net.connect(comfyui.port, comfyui.host)
        socket.once("connect", () => {
          stream.respond({ ":status": 200 })
          socket.pipe(stream).pipe(socket)
        })
        socket.once("error", () => {
          if (!stream.headersSent) stream.respond({ ":status": 502 })
          stream.destroy()
        })
        stream.once("close", () => socket.destroy())
      })
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
      const session = http2.connect(`http://127.0.0.1:${(server.address() as net.AddressInfo).port}`)
      await new Promise<void>((resolve) => session.once("connect", () => resolve()))
      sessions.set(runnerId, session)
      return { server, session, stats }
    }),
    ({ server, session }) =>
      Effect.promise(() => {
        sessions.delete(runnerId)
        session.destroy()
        return new Promise<void>((resolve) => server.close(() => resolve()))
      })
  )

/** An agent runner: its endpoint is an address nothing listens on, never to be used. */
const agentRunner = (id: string): RunnerTarget => ({
  kind: "user",
  id,
  name: "behind NAT",
  endpoint: "http://127.0.0.1:9",
  headers: {},
  tags: [],
  status: "active",
  connection: "agent"
})

const hostOf = (fake: FakeComfyUI) => {
  const url = new URL(fake.url)
  return { host: url.hostname, port: Number(url.port) }
}

layer(gatewayLayer({ agents: registry }), { excludeTestServices: true })("RunnerGateway through an agent", (it) => {
  it.effect("probes, uploads, submits, follows the events, reads the history, downloads and cancels through the tunnel", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped()
      const runner = agentRunner(uuid())
      const agent = yield* testAgent(runner.id, hostOf(fake))
      const gateway = yield* RunnerGateway
      expect(yield* gateway.probe(runner)).toMatchObject({ version: expect.any(String) })

      const events = yield* gateway.events(runner, "wes-agent-1")
      const first = yield* Queue.take(events)
      expect(first).toEqual({ _tag: "Connected" })

      const uploaded = yield* gateway.uploadInput(runner, { filename: "in.png", content_type: "image/png", content: Stream.make(solidPng(2, 2, 1)) })
      const id = uuid()
      yield* gateway.submit(runner, { prompt_id: id, prompt: loadImageWorkflow({ image: inputReference(uploaded) }), client_id: "wes-agent-1", extra_data: {} })
      // The prompt's live events come through the tunnelled WebSocket.
      const seen: Array<RunnerEvent> = []
      while (!seen.some((e) => e._tag === "PromptDone" && e.prompt_id === id)) seen.push(yield* Queue.take(events))
      expect(seen.some((e) => e._tag === "Executing" && e.prompt_id === id)).toBe(true)

      const history = Option.getOrThrow(yield* gateway.history(runner, id))
      const download = yield* gateway.download(runner, history.outputs[0]!)
      const bytes = isBlobBytes(download.content)
        ? Buffer.concat(download.content)
        : Buffer.concat(yield* Stream.runCollect(download.content))
      expect(Array.from(bytes.subarray(0, 4))).toEqual([137, 80, 78, 71])
      yield* gateway.queue(runner)
      yield* gateway.cancel(runner, id)

      expect(fake.submissions.map((s) => s.prompt_id)).toEqual([id])
      expect(agent.stats.tunnels).toBeGreaterThanOrEqual(2)
      expect([...agent.stats.authorities]).toEqual([COMFYUI_AUTHORITY])
    }))

  it.effect("fails a call to an agent runner whose agent is not connected here as unreachable, saying so", () =>
    Effect.gen(function*() {
      const gateway = yield* RunnerGateway
      const runner = agentRunner(uuid())
      const error = yield* Effect.flip(gateway.queue(runner))
      expect(error._tag).toBe("RunnerUnreachable")
      expect(error.message).toContain(AGENT_NOT_CONNECTED)
    }))

  it.effect("fails as unreachable when the agent cannot reach its ComfyUI", () =>
    Effect.gen(function*() {
      // A port nothing listens on: the agent answers the CONNECT with 502.
      const closed = yield* Effect.promise(() =>
        new Promise<number>((resolve) => {
          const s = net.createServer().listen(0, "127.0.0.1", () => {
            const port = (s.address() as net.AddressInfo).port
            s.close(() => resolve(port))
          })
        })
      )
      const runner = agentRunner(uuid())
      yield* testAgent(runner.id, { host: "127.0.0.1", port: closed })
      const gateway = yield* RunnerGateway
      const error = yield* Effect.flip(gateway.queue(runner))
      expect(error._tag).toBe("RunnerUnreachable")
      expect(error.message).toContain("could not reach ComfyUI (HTTP 502)")
    }))
})
