/**
 * The statement budget of a workflow on PostgreSQL, counted on the wire: every statement WES's
 * store sends (an Execute of the extended protocol, or a simple Query) and every round trip
 * (a Sync, or a simple Query), from `create` to `completed`, on the happy path with one output
 * file stored in the database. Counts, never times. The dispatcher's timers (scans, idle checks,
 * reconciliation, lease renewals, runner refreshes) are set far apart, so only what the
 * workflows cause is counted; the inspection that waits for each workflow to finish uses a
 * connection of its own.
 */
import * as net from "node:net"
import type { Duplex } from "node:stream"
import {
  AccountService,
  PlatformLive,
  RunnerProbe,
  RunnerService,
  TierPolicy,
  type User,
  useCasesLayer,
  WorkflowService
} from "@wes/core"
import { RunnerGatewayNode } from "@wes/runner-client"
import { FakeComfyUI, saveImageWorkflow } from "@wes/runner-client/testing"
import { PgStoreLive } from "@wes/storage-pg"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Redacted from "effect/Redacted"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { TestDatabase } from "./instances.js"
import { poll } from "./polling.js"

/** What the budget asks: most statements per workflow. */
const ONE_BY_ONE_BUDGET = 8
/** Runners (fake ComfyUIs): a burst spreads over them, as on a real deployment. */
const RUNNERS = 4

/** Frontend messages sent on the store's connections. */
class WireCount {
  statements = 0
  roundTrips = 0
  snapshot() {
    return { statements: this.statements, roundTrips: this.roundTrips }
  }
}

/**
 * Counts the PostgreSQL frontend messages in the bytes written: after the startup message
 * (length-prefixed, no type byte), every message is a type byte and a length.
 */
const messageCounter = (count: WireCount) => {
  let started = false
  let pending = Buffer.alloc(0)
  return (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk])
    for (;;) {
      if (!started) {
        if (pending.length < 8) return
        const length = pending.readInt32BE(0)
        if (pending.length < length) return
        // An SSL request (80877103) comes before the startup message (protocol 3.0: 196608).
        if (pending.readInt32BE(4) === 196608) started = true
        pending = pending.subarray(length)
        continue
      }
      if (pending.length < 5) return
      const length = pending.readInt32BE(1)
      if (pending.length < 1 + length) return
      const type = String.fromCharCode(pending[0]!)
      if (type === "E" || type === "Q") count.statements++
      if (type === "S" || type === "Q") count.roundTrips++
      pending = pending.subarray(1 + length)
    }
  }
}

/** A socket for the driver that counts what it writes (at the Writable's `_write`/`_writev`, which every write goes through). */
const countingSocket = (count: WireCount) => (): Duplex => {
  const counted = messageCounter(count)
  class CountingSocket extends net.Socket {
    override _write(chunk: Buffer, encoding: BufferEncoding, callback: (error?: Error | null) => void) {
      counted(chunk)
      super._write(chunk, encoding, callback)
    }
    override _writev(chunks: Array<{ chunk: Buffer; encoding: BufferEncoding }>, callback: (error?: Error | null) => void) {
      for (const { chunk } of chunks) counted(chunk)
      super._writev!(chunks, callback)
    }
  }
  return new CountingSocket()
}

const far = "1 hour"

describe("statements per workflow on PostgreSQL", () => {
  const count = new WireCount()
  let db: TestDatabase
  const fakes: Array<FakeComfyUI> = []
  let runtime: ManagedRuntime.ManagedRuntime<WorkflowService | AccountService | RunnerService, unknown>
  let user: User

  beforeAll(async () => {
    db = await TestDatabase.create()
    for (let i = 0; i < RUNNERS; i++) fakes.push(await FakeComfyUI.start())
    const store = PgStoreLive({
      url: Redacted.make(db.url()),
      stream: countingSocket(count),
      events: { heartbeatInterval: far },
      runnerLeases: { leaseTime: far, renewInterval: "30 minutes" }
    })
    const gateway = RunnerGatewayNode()
    const core = useCasesLayer({
      dispatcher: {
        scanInterval: far,
        claimInterval: far,
        reconcileInterval: far,
        claimLease: far,
        idleAfter: far,
        runnerRefreshInterval: far
      }
    }).pipe(
      Layer.provideMerge(Layer.mergeAll(store, gateway, RunnerProbe.Off, TierPolicy.layer({}), PlatformLive))
    )
    runtime = ManagedRuntime.make(core)
    user = await runtime.runPromise(Effect.flatMap(AccountService, (a) => a.createUser({ tier: "pro" })))
    for (const [i, fake] of fakes.entries()) {
      await runtime.runPromise(Effect.flatMap(RunnerService, (r) => r.create(user, { name: `fake ${i}`, endpoint: fake.url })))
    }
  }, 60_000)

  afterAll(async () => {
    await runtime?.dispose()
    await Promise.all(fakes.map((f) => f.close()))
    await db?.drop()
  })

  const completed = async (ids: ReadonlyArray<string>) =>
    poll(`${ids.length} workflows completed`, async () => {
      const rows = await db.query((sql) =>
        sql<{ n: number }>`SELECT count(*)::int AS n FROM workflows WHERE id = ANY(${ids}::uuid[]) AND status = 'completed'`
      )
      return rows[0]!.n === ids.length ? true : undefined
    }, 30_000, 5)

  // A different colour each time: ComfyUI (and the fake) would serve a repeated prompt from its cache.
  const create = (i: number) =>
    runtime.runPromise(Effect.flatMap(WorkflowService, (s) =>
      s.create(user, { name: `budget ${i}`, workflow_json: saveImageWorkflow({ color: i }) })))

  it("a workflow costs at most 8 statements when workflows arrive one by one, fewer in a burst over 4 runners", async () => {
    // Warm up: each runner's driver starts, takes the runner's lease and connects once.
    await completed(await Promise.all(Array.from({ length: RUNNERS }, (_, i) => create(1000 + i).then((w) => w.id))))
    const n = 20
    const before = count.snapshot()
    for (let i = 1; i <= n; i++) await completed([(await create(i)).id])
    const one = count.snapshot()
    const perWorkflow = (one.statements - before.statements) / n
    const tripsPerWorkflow = (one.roundTrips - before.roundTrips) / n

    const burst = 50
    const ids = await Promise.all(Array.from({ length: burst }, (_, i) => create(100 + i).then((w) => w.id)))
    await completed(ids)
    const after = count.snapshot()
    const perWorkflowInBurst = (after.statements - one.statements) / burst

    console.log(
      `statements per workflow: one by one ${perWorkflow} (${tripsPerWorkflow} round trips), in a burst of ${burst} ${perWorkflowInBurst}`
    )
    expect(fakes.reduce((sum, f) => sum + f.submissions.length, 0)).toBe(RUNNERS + n + burst)
    expect(perWorkflow).toBeLessThanOrEqual(ONE_BY_ONE_BUDGET)
    expect(perWorkflowInBurst).toBeLessThan(perWorkflow)
  }, 120_000)
})
