/**
 * The planner uses an index for every list, history, count and claim query of the workflows
 * table once it is big: 100k rows of 100 users, mostly finished, as a long-running service has.
 */
import { expect, layer } from "@effect/vitest"
import * as SqlClient from "effect/sql/SqlClient"
import type * as Statement from "effect/sql/Statement"
import type { RunnerRef } from "@wes/core"
import { Fixtures as F } from "@wes/core/testing"
import { dispatchQueries, retentionQueries, runnerLeaseQueries, runnerLoadQuery, workflowQueries } from "@wes/storage-pg"
import * as Effect from "effect/Effect"
import { freshStore } from "./harness.js"

const ROWS = 100_000

/** Workflows of 100 users spread over 20 user runners and 5 managed runners; 3 in 50 unfinished. */
const seed = (sql: SqlClient.SqlClient) =>
  Effect.gen(function*() {
    yield* sql`INSERT INTO workflows (id, user_id, name, status, tags, created_at, updated_at,
        user_runner_id, managed_runner_id, workflow_json, idempotency_key)
      SELECT gen_random_uuid(), u.ids[1 + i % 100], 'wf' || i,
        CASE WHEN i % 50 = 0 THEN 'running' WHEN i % 50 = 1 THEN 'accepted' WHEN i % 50 = 2 THEN 'uploaded'
          ELSE 'completed' END,
        CASE WHEN i % 3 = 0 THEN ARRAY['gpu'] ELSE ARRAY[]::text[] END,
        timestamptz '2026-01-01' + i * interval '1 second', timestamptz '2026-01-01' + i * interval '1 second',
        CASE WHEN i % 2 = 0 THEN r.ids[1 + i % 20] END, CASE WHEN i % 2 = 1 THEN m.ids[1 + i % 5] END,
        '{"1":{"class_type":"EmptyImage","inputs":{}}}'::jsonb,
        CASE WHEN i % 10 = 0 THEN 'key-' || i END
      FROM generate_series(1, ${ROWS}) AS i,
        (SELECT array_agg(gen_random_uuid()) AS ids FROM generate_series(1, 100)) AS u,
        (SELECT array_agg(gen_random_uuid()) AS ids FROM generate_series(1, 20)) AS r,
        (SELECT array_agg(gen_random_uuid()) AS ids FROM generate_series(1, 5)) AS m`
    yield* sql`VACUUM ANALYZE workflows`
    const [sample] = yield* sql<{ user_id: string; user_runner_id: string; managed_runner_id: string }>`
      SELECT (SELECT user_id FROM workflows LIMIT 1) AS user_id,
        (SELECT user_runner_id FROM workflows WHERE user_runner_id IS NOT NULL LIMIT 1) AS user_runner_id,
        (SELECT managed_runner_id FROM workflows WHERE managed_runner_id IS NOT NULL LIMIT 1) AS managed_runner_id`
    return sample!
  })

const explain = (sql: SqlClient.SqlClient, name: string, statement: Statement.Statement<object>) =>
  Effect.gen(function*() {
    const [text, params] = statement.compile()
    const rows = yield* sql.unsafe<{ "QUERY PLAN": string }>(`EXPLAIN ${text}`, params)
    const plan = rows.map((r) => r["QUERY PLAN"]).join("\n")
    console.log(`--- ${name}\n${plan}`)
    return plan
  })

layer(freshStore(), { excludeTestServices: true, timeout: 60_000 })("indexes", (it) => {
  it.effect("every workflow query uses an index on a large table (no Seq Scan on workflows)", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const started = Date.now()
      const sample = yield* seed(sql)
      console.log(`seeded ${ROWS} workflows in ${Date.now() - started} ms`)
      const q = workflowQueries(sql)
      const d = dispatchQueries(sql)
      const user: RunnerRef = { kind: "user", id: sample.user_runner_id as never }
      const managed: RunnerRef = { kind: "managed", id: sample.managed_runner_id as never }
      const page = { page: 2, per_page: 10 }
      const list = q.list(sample.user_id, page)
      const byStatus = q.list(sample.user_id, { ...page, status: "running" })
      const byTag = q.list(sample.user_id, { ...page, tag: "gpu" })
      const queries: ReadonlyArray<readonly [string, Statement.Statement<object>]> = [
        ["findById", q.findById(F.uuid())],
        ["list", list.items],
        ["list total", list.total],
        ["list status=running", byStatus.items],
        ["list status=running total", byStatus.total],
        ["list tag=gpu", byTag.items],
        ["list tag=gpu total", byTag.total],
        ["history (user runner)", q.history(sample.user_id, user, 10)],
        ["history (managed runner)", q.history(sample.user_id, managed, 10)],
        ["countActive", q.countActive(sample.user_id)],
        ["countCreatedSince", q.countCreatedSince(sample.user_id, F.at(60 * 24))],
        ["countInFlight", q.countInFlight([sample.user_runner_id, sample.managed_runner_id])],
        ["countUnfinishedByStatus", q.countUnfinishedByStatus],
        ["findByIdempotencyKey", q.findByIdempotencyKey(sample.user_id, "key-10", F.at(0))],
        ["listSubmittedOnRunner (user runner)", q.listSubmittedOnRunner(sample.user_runner_id, 10)],
        ["listSubmittedOnRunner (managed runner)", q.listSubmittedOnRunner(sample.managed_runner_id, 10)],
        ["findHead", q.findHead(F.uuid())],
        ["quota", q.quota(sample.user_id)],
        ["runner candidates", runnerLoadQuery(sql, sample.user_id, ["pro", "plus"])],
        ["unfinishedRunners", q.unfinishedRunners()],
        ["claim (user runner)", d.claim(sample.user_runner_id, "instance-a", 10, 30_000, 300_000)],
        ["claim (managed runner)", d.claim(sample.managed_runner_id, "instance-a", 10, 30_000, 300_000)],
        ["claimable runners", d.claimable([sample.user_runner_id, sample.managed_runner_id, F.uuid()])],
        ["renew claims", d.renew([F.uuid(), F.uuid()], "instance-a", 30_000)],
        ["release claims", d.release([F.uuid()], "instance-a")]
      ]
      for (const [name, statement] of queries) {
        const plan = yield* explain(sql, name, statement)
        expect(plan, name).not.toMatch(/Seq Scan on workflows/)
        expect(plan, name).toMatch(/Index|Bitmap/)
        // The dispatcher's per-runner reads go straight to the runner's rows, in order (no walk over
        // every unfinished workflow, no sort before the LIMIT). The claim walks the runner's
        // waiting users and, per user and priority, the oldest of them, each by the waiting index.
        if (name.startsWith("listSubmittedOnRunner")) {
          const ordered = `Limit[^\\n]*\\n\\s*->\\s+(LockRows[^\\n]*\\n\\s*->\\s+)?Index Scan using workflows_submitted_runner_idx on workflows`
          expect(plan, name).toMatch(new RegExp(`${ordered}[^\\n]*\\n\\s*Index Cond: \\(COALESCE`))
        }
        if (name === "claimable runners") expect(plan, name).toMatch(/Index (Only )?Scan using workflows_waiting_runner_user_idx/)
        if (name.startsWith("claim (")) {
          const walks = plan.match(/Index (Only )?Scan using workflows_waiting_runner_user_idx/g) ?? []
          // The first user of the walk, and one per priority of each user.
          expect(walks.length, name).toBeGreaterThanOrEqual(4)
          expect(plan, name).not.toMatch(/Index Scan using workflows_(user|active|in_flight)/)
        }
      }
      // Retention: the finished workflows (their end set), of which the due ones are read oldest
      // end first from the partial indexes of those not swept (not pruned) yet.
      yield* sql`UPDATE workflows SET completed_at = created_at WHERE status = 'completed'`
      yield* sql`VACUUM ANALYZE workflows`
      const r = retentionQueries(sql)
      const cutoffs = { free: F.at(60 * 10), pro: F.at(0), plus: F.at(-60) }
      for (
        const [name, statement, index] of [
          ["retention claimDue", r.claimDue(cutoffs, "instance-a", F.at(0), F.at(10), 100), "workflows_retention_due_idx"],
          ["retention pruneEvents", r.pruneEvents(F.at(60 * 10), 100), "workflows_events_kept_idx"]
        ] as const
      ) {
        const plan = yield* explain(sql, name, statement)
        expect(plan, name).not.toMatch(/Seq Scan on workflows/)
        expect(plan, name).toContain(index)
      }
      // The runner leases: one row per runner, reached by its primary key.
      const leases = runnerLeaseQueries(sql)
      yield* sql`INSERT INTO runner_leases (runner_id, owner, epoch, expires_at)
        SELECT gen_random_uuid()::text, 'wes-x', 1, now() FROM generate_series(1, 2000)`
      yield* sql`ANALYZE runner_leases`
      for (
        const [name, statement] of [
          ["acquire a runner", leases.acquire(F.uuid(), "instance-a", 15_000)],
          ["renew a runner lease", leases.renew(F.uuid(), "instance-a", "1", 15_000)],
          ["release a runner lease", leases.release(F.uuid(), "instance-a", "1")]
        ] as const
      ) {
        const plan = yield* explain(sql, name, statement)
        expect(plan, name).not.toMatch(/Seq Scan/)
      }
    }))
})
