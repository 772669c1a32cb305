/**
 * The guarded connections (issue 33, item 3): a user runner's host name is resolved once per
 * connection and the connection goes to the address checked, so a name that answers a public
 * address first and a private one afterwards (DNS rebinding), or the reverse, never reaches the
 * private server: not by HTTP, not by the WebSocket.
 */
import type { RunnerEvent, RunnerTarget } from "@wes/core"
import { rebindingResolver, standInDenied, type TwoAddressServer, twoAddressServer } from "@wes/runner-client/testing"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Result from "effect/Result"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { type AddressGuard, makeRunnerGateway, type Resolver } from "../src/index.js"

const words = { url: "runner endpoint", host: "runner endpoint host", refused: "runner endpoint", fix: "ALLOW_IT=true" }
const guardOf = (resolve: Resolver): AddressGuard => ({ words, resolve, denied: standInDenied })

let server: TwoAddressServer
beforeEach(async () => {
  server = await twoAddressServer((_req, res) => {
    res.setHeader("content-type", "application/json")
    res.end(JSON.stringify({ queue_running: [], queue_pending: [] }))
  })
})
afterEach(() => server.close())

// `localhost`: were the name resolved a second time by the system, it would reach 127.0.0.1 or ::1.
const runner = (kind: "user" | "managed" = "user"): RunnerTarget =>
  ({ kind, id: "r1", name: "r", endpoint: `http://localhost:${server.port}`, headers: {}, tags: [], status: "active" })

/** The messages of `queue` calls in turn (undefined: answered), through one gateway. */
const queueCalls = (guard: AddressGuard, target: RunnerTarget, n: number) =>
  Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const gateway = yield* makeRunnerGateway({ guard })
    const out: Array<string | undefined> = []
    for (let i = 0; i < n; i++) {
      const r = yield* Effect.result(gateway.queue(target))
      out.push(Result.isFailure(r) ? r.failure.message : undefined)
    }
    return out
  })))

describe("user runners through the guard", () => {
  it("a name answering public then private: the first call reaches the checked address, the next is refused", async () => {
    const resolve = rebindingResolver(["127.0.0.2"], ["127.0.0.1"])
    const [first, second] = await queueCalls(guardOf(resolve), runner(), 2)
    expect(first).toBeUndefined()
    expect(second).toContain("runner endpoint localhost is on a private, loopback, link-local or unspecified address")
    expect(second).toContain("ALLOW_IT=true")
    expect([server.publicHits(), server.privateHits()]).toEqual([1, 0])
    // One resolution per connection: nothing else looked the name up.
    expect(resolve.calls()).toBe(2)
  })

  it("a name answering private then public (what defeats check-then-fetch) is refused first, then reaches the public address only", async () => {
    const resolve = rebindingResolver(["127.0.0.1"], ["127.0.0.2"])
    const [first, second] = await queueCalls(guardOf(resolve), runner(), 2)
    expect(first).toContain("is on a private")
    expect(second).toBeUndefined()
    expect([server.publicHits(), server.privateHits()]).toEqual([1, 0])
  })

  it("refuses a name with any private address among its answers, and private IP literals", async () => {
    expect(await queueCalls(guardOf(rebindingResolver(["127.0.0.2", "127.0.0.1"])), runner(), 1)).toEqual([expect.stringContaining("is on a private")])
    const literal = { ...runner(), endpoint: `http://127.0.0.1:${server.port}` }
    expect(await queueCalls(guardOf(rebindingResolver(["127.0.0.2"])), literal, 1)).toEqual([expect.stringContaining("127.0.0.1 is on a private")])
    expect(server.privateHits()).toBe(0)
  })

  it("managed runners are not guarded", async () => {
    const resolve = rebindingResolver(["127.0.0.1"])
    const literal = { ...runner("managed"), endpoint: `http://127.0.0.1:${server.port}` }
    expect(await queueCalls(guardOf(resolve), literal, 1)).toEqual([undefined])
    expect(server.privateHits()).toBe(1)
  })

  it("the WebSocket of a rebinding name never reaches the private address", async () => {
    const resolve = rebindingResolver(["127.0.0.1"])
    const first = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const gateway = yield* makeRunnerGateway({ guard: guardOf(resolve), reconnectInitialDelay: "1 hour" })
      const events = yield* gateway.events(runner(), "c1")
      return yield* Queue.take(events)
    })))
    expect(first).toEqual({ _tag: "Disconnected", reason: expect.stringContaining("is on a private") } satisfies Partial<RunnerEvent>)
    expect(server.privateHits()).toBe(0)
  })

  it("the WebSocket of an allowed name goes to the address checked", async () => {
    const resolve = rebindingResolver(["127.0.0.2"])
    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const gateway = yield* makeRunnerGateway({ guard: guardOf(resolve), reconnectInitialDelay: "1 hour" })
      // The stand-in server takes the upgrade and hangs up: one attempt, then a disconnect.
      return yield* Queue.take(yield* gateway.events(runner(), "c1"))
    })))
    expect([server.publicHits(), server.privateHits(), resolve.calls()]).toEqual([1, 0, 1])
  })
})
