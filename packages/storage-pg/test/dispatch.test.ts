/**
 * The dispatcher's guarantees across instances: two stores (two pools, two LISTEN connections,
 * two instance ids) on one schema, as two `wes serve` processes sharing a database.
 */
import { describe, expect, it } from "@effect/vitest"
import * as SqlClient from "effect/sql/SqlClient"
import { DispatchQueue, RunnerOwnership, WAKE_ALL, type Workflow, WorkflowRepository, WorkflowTransition } from "@wes/core"
import { Fixtures as F } from "@wes/core/testing"
import { type PgStoreConfig, renewalSpacing } from "@wes/storage-pg"
import * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/testing/TestClock"
import { admin, awaitListener, freshSchema, storeOn } from "./harness.js"

/** A store instance on `schema` that can be stopped (its pool and LISTEN connection closed) before the test ends. */
const instance = (schema: string, name: string, options: Omit<PgStoreConfig, "url"> = {}) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
    const applicationName = `wes-test-${name}-${schema}`
    const context = yield* Layer.buildWithScope(storeOn(schema, { applicationName, ...options }), scope)
    return {
      applicationName,
      repo: Context.get(context, WorkflowRepository),
      queue: Context.get(context, DispatchQueue),
      ownership: Context.get(context, RunnerOwnership),
      sql: Context.get(context, SqlClient.SqlClient),
      /** Stops the instance without giving anything back, as a crash would. */
      stop: Scope.close(scope, Exit.void)
    }
  })

type Instance = Effect.Success<ReturnType<typeof instance>>

/** Two instances on one fresh schema. */
const twoInstances = (aOptions: Omit<PgStoreConfig, "url"> = {}, bOptions: Omit<PgStoreConfig, "url"> = {}) =>
  Effect.gen(function*() {
    const schema = yield* freshSchema
    return { schema, a: yield* instance(schema, "a", aOptions), b: yield* instance(schema, "b", bOptions) }
  })

/**
 * Collects the wake-ups `b` receives; `upTo(id)` waits for `id` and gives what came up to it
 * (included), `next(id)` just waits for it.
 */
const wakeupsOf = (b: Instance) =>
  Effect.gen(function*() {
    const received = yield* Queue.bounded<string>(1000)
    yield* b.queue.wakeups.pipe(Stream.runForEach((id) => Queue.offer(received, id)), Effect.forkScoped)
    const upTo = (id: string) =>
      Effect.gen(function*() {
        const seen: Array<string> = []
        while (seen.at(-1) !== id) seen.push(yield* Queue.take(received))
        return seen
      }).pipe(Effect.timeout("10 seconds"))
    return { received, upTo, next: (id: string) => Effect.asVoid(upTo(id)) }
  })

/** Announces `id` through `a` every 100 ms until `heard` completes (the other LISTEN may still be starting). */
const announceUntil = <A, E, R>(a: Instance, id: string, heard: Effect.Effect<A, E, R>) =>
  Effect.raceFirst(heard, Effect.andThen(a.queue.notify(id).pipe(Effect.repeat(Schedule.spaced("100 millis"))), Effect.never))

const waitingOn = (runner: string, n: number) => {
  const owner = F.user()
  return Array.from({ length: n }, (_, i) =>
    F.workflow(owner.id, { user_runner_id: runner as Workflow["user_runner_id"], created_at: F.at(i) }))
}

const ids = (ws: ReadonlyArray<Workflow>) => ws.map((w) => w.id)

/** Retries `effect` every 50 ms (a live clock) until it gives a `Some`; fails after `within`, naming `what`. */
const eventually = <A, E, R>(what: string, effect: Effect.Effect<Option.Option<A>, E, R>, within: Duration.Input) =>
  effect.pipe(
    Effect.flatMap(Option.match({ onNone: () => Effect.fail("not yet" as const), onSome: Effect.succeed })),
    Effect.retry({ while: (e) => e === "not yet", schedule: Schedule.spaced("50 millis").pipe(Schedule.upTo({ duration: within })) }),
    Effect.mapError((e) => e === "not yet" ? new Error(`timed out waiting for ${what}`) : e)
  )

/** Ends the lease of `runnerId` on the database's clock now, as if its time had run out. */
const lapse = (schema: string, runnerId: string) =>
  admin((sql) => sql`UPDATE ${sql(schema)}.runner_leases SET expires_at = now() - interval '1 second' WHERE runner_id = ${runnerId}`)

/** When the lease of `runnerId` ends now, as the database's timestamp (text). */
const leaseEnd = (sql: SqlClient.SqlClient, runnerId: string) =>
  Effect.map(sql<{ end: string }>`SELECT expires_at::text AS end FROM runner_leases WHERE runner_id = ${runnerId}`, (rows) => rows[0]!.end)

/** Waits until the database's clock is past `end` (a timestamp from `leaseEnd`). */
const databaseTimePast = (sql: SqlClient.SqlClient, end: string) =>
  eventually(
    "the database's clock to pass the lease's end",
    Effect.map(sql<{ past: boolean }>`SELECT now() > ${end}::timestamptz AS past`, (rows) => rows[0]?.past === true ? Option.some(true) : Option.none()),
    "5 seconds"
  )

describe("runner ownership across instances", () => {
  it.live("is exclusive: B cannot acquire a runner A holds; once A lets go, B takes it with a new client id", () =>
    Effect.gen(function*() {
      const { a, b } = yield* twoInstances()
      expect(a.ownership.instanceId).not.toBe(b.ownership.instanceId)
      const r = F.uuid()

      const scopeA = yield* Scope.make()
      const leaseA = yield* a.ownership.acquire(r).pipe(Scope.provide(scopeA))
      expect(Option.isSome(leaseA)).toBe(true)
      expect(yield* Effect.scoped(b.ownership.acquire(r))).toEqual(Option.none())

      yield* Scope.close(scopeA, Exit.void)
      const leaseB = yield* b.ownership.acquire(r)
      expect(Option.isSome(leaseB)).toBe(true)
      expect(Option.getOrThrow(leaseB).clientId).not.toBe(Option.getOrThrow(leaseA).clientId)
      expect(yield* Effect.scoped(a.ownership.acquire(r))).toEqual(Option.none())
    }))

  it.live("two instances racing for the same runners: exactly one wins each", () =>
    Effect.gen(function*() {
      const { a, b } = yield* twoInstances()
      const runners = Array.from({ length: 20 }, () => F.uuid())
      const won = yield* Effect.forEach(runners, (r) =>
        Effect.all([a.ownership.acquire(r), b.ownership.acquire(r)], { concurrency: 2 }).pipe(
          Effect.map((leases) => leases.filter(Option.isSome).length)
        ), { concurrency: "unbounded" })
      expect(won).toEqual(runners.map(() => 1))
    }))

  it.effect("an instance that stops renewing loses the runner after the lease time; B takes over with a higher epoch", () =>
    Effect.gen(function*() {
      // A's renewals never come (its renewer is as good as dead); its lease lasts 800 ms of A's
      // clock, a TestClock here. The database keeps its own (real) time.
      const { a, b, schema } = yield* twoInstances({ runnerLeases: { leaseTime: "800 millis", renewInterval: "1 hour" } })
      const r = F.uuid()
      const leaseA = Option.getOrThrow(yield* a.ownership.acquire(r))
      const lost = yield* Effect.forkChild(leaseA.lost)
      expect(leaseA.clientId).toBe(`wes-${r}-1`)
      expect(leaseA.held()).toBe(true)
      expect(yield* Effect.scoped(b.ownership.acquire(r))).toEqual(Option.none())

      // A stops counting on the lease before it can be taken over (the fencing check)...
      yield* TestClock.adjust("700 millis")
      expect(leaseA.held()).toBe(false)
      expect(lost.pollUnsafe()).toBeUndefined()
      // ...and notices on its own once the lease time is up, not before.
      yield* TestClock.adjust("100 millis")
      yield* Fiber.join(lost)

      // The database has the lease still, until its own time runs out; then B takes over.
      expect(yield* Effect.scoped(b.ownership.acquire(r))).toEqual(Option.none())
      yield* lapse(schema, r)
      const leaseB = Option.getOrThrow(yield* b.ownership.acquire(r))
      expect(leaseB.clientId).toBe(`wes-${r}-2`)
      expect(leaseB.held()).toBe(true)
    }))

  it.effect("a renewal that finds the runner taken over completes `lost`, and A's release leaves B's lease alone", () =>
    Effect.gen(function*() {
      // A renews on its clock, a TestClock here: no renewal comes until the test moves it.
      const { a, b, schema } = yield* twoInstances({ runnerLeases: { leaseTime: "30 seconds", renewInterval: "100 millis" } })
      const r = F.uuid()
      const scopeA = yield* Scope.make()
      const leaseA = Option.getOrThrow(yield* a.ownership.acquire(r).pipe(Scope.provide(scopeA)))
      // A is cut off for longer than its lease (a long pause or a partition): the lease lapses.
      yield* lapse(schema, r)
      const leaseB = Option.getOrThrow(yield* b.ownership.acquire(r))
      expect(leaseB.clientId).toBe(`wes-${r}-2`)
      // A's next renewal finds the row is no longer its own, long before its 30 s would be up.
      yield* TestClock.adjust("100 millis")
      yield* leaseA.lost
      yield* Scope.close(scopeA, Exit.void)
      expect(yield* Effect.scoped(a.ownership.acquire(r))).toEqual(Option.none())
    }))

  it.live("an instance that died holding runners: after the lease time another instance drives them", () =>
    Effect.gen(function*() {
      // real time: the database's now() decides when a lease ends, and this test lets it end.
      const { a, b } = yield* twoInstances({ runnerLeases: { leaseTime: "600 millis", renewInterval: "200 millis" } })
      const r = F.uuid()
      // Acquired in a scope that is never closed: no release, as in a crash; then the pool goes.
      const never = yield* Scope.make()
      yield* Effect.addFinalizer(() => Scope.close(never, Exit.void))
      expect(Option.isSome(yield* a.ownership.acquire(r).pipe(Scope.provide(never)))).toBe(true)
      // While A lives, its renewals keep the runner past the lease time: once the database's clock
      // is past the end of the first lease, B still cannot take the runner.
      yield* databaseTimePast(b.sql, yield* leaseEnd(b.sql, r))
      expect(yield* Effect.scoped(b.ownership.acquire(r))).toEqual(Option.none())
      const died = Date.now()
      yield* a.stop
      const leaseB = yield* eventually("B to acquire the runner", b.ownership.acquire(r), "5 seconds")
      // At most one renewal interval (200 ms) passed between A's last renewal and its death.
      expect(Date.now() - died).toBeGreaterThanOrEqual(300)
      expect(leaseB.clientId).toBe(`wes-${r}-2`)
    }))
})

describe("lease renewals", () => {
  it.effect("wait 80-100 % of the renewal interval, drawn each time, so leases taken together drift apart", () =>
    Effect.gen(function*() {
      const waits = yield* Effect.forEach(Array.from({ length: 200 }), () => renewalSpacing(5_000))
      for (const w of waits) {
        expect(w).toBeGreaterThanOrEqual(4_000)
        expect(w).toBeLessThanOrEqual(5_000)
      }
      // Spread over the range, not one fixed wait.
      expect(Math.max(...waits) - Math.min(...waits)).toBeGreaterThan(500)
    }))
})

describe("the dispatch queue across instances", () => {
  it.live("200 waiting workflows claimed by 4 claimers on 2 instances at once: each exactly once", () =>
    Effect.gen(function*() {
      const { a, b } = yield* twoInstances()
      const r = F.uuid()
      const waiting = waitingOn(r, 200)
      yield* Effect.forEach(waiting, (w) => a.repo.create(w), { concurrency: 8, discard: true })

      const claimers = [
        { instance: a, owner: `${a.ownership.instanceId}-1` },
        { instance: a, owner: `${a.ownership.instanceId}-2` },
        { instance: b, owner: `${b.ownership.instanceId}-1` },
        { instance: b, owner: `${b.ownership.instanceId}-2` }
      ]
      const done = yield* Ref.make(0)
      // Like a driver: claim a batch, submit each (it leaves the waiting statuses), give the claim back.
      const claimAll = ({ instance: { queue, repo }, owner }: (typeof claimers)[number]) =>
        Effect.gen(function*() {
          const got: Array<string> = []
          for (;;) {
            const batch = (yield* queue.claim(r, owner, 7, 60_000, 300_000)).map((c) => c.workflow)
            if (batch.length === 0) {
              // A claimer skips what another holds locked at that moment: it may find nothing while
              // work remains, and tries again, as a driver does at its next wake-up.
              if ((yield* Ref.get(done)) >= 200) return { owner, got }
              yield* Effect.yieldNow
              continue
            }
            const created = batch.map((w) => DateTime.toEpochMillis(w.created_at))
            expect(created, "each batch comes oldest first").toEqual([...created].sort((x, y) => x - y))
            got.push(...ids(batch))
            yield* Ref.update(done, (n) => n + batch.length)
            yield* Effect.forEach(batch, (w) => repo.transition({ id: w.id, steps: [WorkflowTransition.Uploaded(), WorkflowTransition.Queued({ prompt_id: w.id, queue_number: 1 })], at: F.at(1) }), {
              discard: true
            })
            yield* queue.release(ids(batch), owner)
          }
        })
      const results = yield* Effect.forEach(claimers, claimAll, { concurrency: "unbounded" })

      const all = results.flatMap((x) => x.got)
      expect(all.length).toBe(200)
      expect(new Set(all)).toEqual(new Set(ids(waiting)))
      expect(yield* a.repo.listSubmittedOnRunner(r, 500)).toHaveLength(200)
      expect((yield* a.repo.listSubmittedOnRunner(r, 500)).every((w) => w.status === "queued")).toBe(true)
      yield* Effect.log(`claims per claimer: ${results.map((x) => x.got.length).join(", ")}`)
    }))

  it.live("claims of an instance that died are taken over by another instance once their lease expires", () =>
    Effect.gen(function*() {
      const { a, b } = yield* twoInstances()
      const r = F.uuid()
      const waiting = waitingOn(r, 5)
      yield* Effect.forEach(waiting, (w) => a.repo.create(w), { discard: true })

      const claimed = (yield* a.queue.claim(r, a.ownership.instanceId, 10, 700, 300_000)).map((c) => c.workflow)
      expect(ids(claimed)).toEqual(ids(waiting))
      const died = Date.now()
      yield* a.stop
      expect(yield* b.queue.claim(r, b.ownership.instanceId, 10, 60_000, 300_000)).toEqual([])
      // Renewing or releasing someone else's claims does nothing.
      yield* b.queue.renew(ids(waiting), "somebody-else", 60_000)
      yield* b.queue.release(ids(waiting), "somebody-else")
      expect(yield* b.queue.claim(r, "somebody-else", 10, 60_000, 300_000)).toEqual([])

      const taken = yield* eventually(
        "B to claim the dead instance's workflows",
        Effect.map(b.queue.claim(r, b.ownership.instanceId, 10, 60_000, 300_000), Option.liftPredicate((ws) => ws.length > 0)),
        "5 seconds"
      )
      expect(Date.now() - died).toBeGreaterThanOrEqual(600)
      expect(ids(taken.map((c) => c.workflow))).toEqual(ids(waiting))
      expect(taken.every((c) => c.resubmit), "the runner is asked before posting what a dead instance claimed").toBe(true)
    }))

  it.live("notify on instance A wakes instance B's wakeups with the runner id", () =>
    Effect.gen(function*() {
      const { a, b } = yield* twoInstances()
      const r = F.uuid()
      const fiber = yield* b.queue.wakeups.pipe(Stream.filter((id) => id === r), Stream.runHead, Effect.forkChild)
      const heard = yield* announceUntil(a, r, Fiber.join(fiber)).pipe(Effect.timeout("10 seconds"))
      expect(heard).toEqual(Option.some(r))
    }))

  it.live("a notify inside a transaction is delivered at COMMIT, and never after a rollback", () =>
    Effect.gen(function*() {
      const { a, b } = yield* twoInstances()
      const { next, upTo } = yield* wakeupsOf(b)
      // Wait until B hears A at all.
      const probe = F.uuid()
      yield* announceUntil(a, probe, next(probe))

      const [committed, marker, rolledBack, after] = [F.uuid(), F.uuid(), F.uuid(), F.uuid()]
      yield* a.sql.withTransaction(Effect.gen(function*() {
        yield* a.queue.notify(committed)
        // Notified and committed through B's pool while A's transaction is open. Notifications
        // arrive in commit order: had `committed` gone out already, it would come first.
        yield* b.queue.notify(marker)
        expect(yield* upTo(marker)).not.toContain(committed)
      }))
      yield* next(committed)

      const failed = yield* a.sql.withTransaction(Effect.andThen(a.queue.notify(rolledBack), Effect.fail("boom" as const))).pipe(
        Effect.flip
      )
      expect(failed).toBe("boom")
      yield* a.queue.notify(after)
      // Notifications arrive in commit order: had the rolled-back one been sent, it would come first.
      expect(yield* upTo(after)).not.toContain(rolledBack)
    }))

  it.live("after B's LISTEN connection is lost, B reconnects, emits a wake-all, and hears A again", () =>
    Effect.gen(function*() {
      const { a, b } = yield* twoInstances({}, { events: { heartbeatInterval: "200 millis", heartbeatTimeout: "1 second" } })
      const { next, received } = yield* wakeupsOf(b)
      const before = yield* awaitListener(b.applicationName)
      const probe = F.uuid()
      yield* announceUntil(a, probe, next(probe))

      const killed = yield* admin((sql) => sql<{ ok: boolean }>`SELECT pg_terminate_backend(${before}) AS ok`)
      expect(killed[0]?.ok).toBe(true)
      // The wake-all of B's first connection, if any, came while that connection lived: from here
      // on only a reconnection's can come.
      yield* Queue.clear(received)
      // Announced while B is deaf: lost, hence the wake-all after B reconnects.
      yield* a.queue.notify(F.uuid())
      yield* next(WAKE_ALL)
      const after = yield* awaitListener(b.applicationName, before)
      expect(after).not.toBe(before)

      const r = F.uuid()
      yield* a.queue.notify(r)
      yield* next(r)
    }))
})
