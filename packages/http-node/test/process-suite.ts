/**
 * The one teardown of the suites that run `wes serve` processes (crash, multi-instance, db-outage,
 * db-restart, soak, operations-pg, tracing, webhooks-instances). A suite calls `processSuite()` at
 * its top and takes from it what a test uses; after each test every instance still running is
 * killed, then everything the test took is closed, then its schemas are dropped (the instances
 * held connections to them). A step that fails does not skip the others: all failures are reported.
 */
import { FakeComfyUI, type FakeComfyUIOptions } from "@wes/runner-client/testing"
import { afterEach } from "vitest"
import { awaitPostgres } from "./chaos.js"
import { killAll, TestDatabase } from "./instances.js"

export interface Closable {
  readonly close: () => Promise<void>
}

export interface ProcessSuite {
  /** A fresh schema of the test database, dropped after the test. */
  readonly database: () => Promise<TestDatabase>
  /** `n` fake runners, without the cross-prompt cache unless `options` say otherwise; closed after the test. */
  readonly fakes: (n: number, options?: FakeComfyUIOptions) => Promise<Array<FakeComfyUI>>
  /** Closes `resource` after the test (before the schemas are dropped); returns it. */
  readonly closeAfter: <A extends Closable>(resource: A) => A
}

/** Fails with `failures`, if there are any. */
const report = (failures: ReadonlyArray<unknown>): void => {
  if (failures.length === 1) throw failures[0]
  if (failures.length > 1) throw new AggregateError(failures, `${failures.length} steps of the process suites' teardown failed`)
}

/** Waits for every one of `tasks` (at once); then fails with what failed. */
const settleAll = async (tasks: ReadonlyArray<Promise<unknown>>): Promise<void> =>
  report((await Promise.allSettled(tasks)).flatMap((o) => (o.status === "rejected" ? [o.reason] : [])))

/**
 * With `waitForPostgres` (a suite that restarts PostgreSQL or kills its connections), the teardown
 * first waits until PostgreSQL answers again, so that later suites find it up.
 */
export const processSuite = (options: { readonly waitForPostgres?: boolean } = {}): ProcessSuite => {
  const open: Array<Closable> = []
  const databases: Array<TestDatabase> = []
  afterEach(async () => {
    const failures: Array<unknown> = []
    const step = async (task: () => Promise<unknown>) => {
      try {
        await task()
      } catch (e) {
        failures.push(e)
      }
    }
    if (options.waitForPostgres === true) await step(awaitPostgres)
    await step(killAll)
    await step(() => settleAll(open.splice(0).map((r) => r.close())))
    await step(() => settleAll(databases.splice(0).map((d) => d.drop())))
    report(failures)
  })
  const closeAfter = <A extends Closable>(resource: A): A => {
    open.push(resource)
    return resource
  }
  return {
    database: async () => {
      const db = await TestDatabase.create()
      databases.push(db)
      return db
    },
    fakes: (n, fakeOptions = { cache: false }) =>
      Promise.all(Array.from({ length: n }, async () => closeAfter(await FakeComfyUI.start(fakeOptions)))),
    closeAfter
  }
}
