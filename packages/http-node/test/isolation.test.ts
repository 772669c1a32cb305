/**
 * Suite 5: tenant isolation. Effect's property checker (effect/Arbitrary) runs random sequences of operations by three users (create,
 * list, get, update, delete of workflows, templates and runners; reruns, cancels, outputs, history,
 * event streams) against the server on the memory store and on PostgreSQL. No answer may contain
 * an id or a name of another user's resources, and every access with another user's id is 404.
 *
 * ISOLATION_SEED replays a run.
 */
import { PgStoreLive } from "@wes/storage-pg"
import * as Arbitrary from "effect/Arbitrary"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { json, smokeWorkflow, startServer, type TestServer, workflowForm } from "./harness.js"
import { TestDatabase } from "./instances.js"

const SEED = Number(process.env["ISOLATION_SEED"] ?? Math.floor(Math.random() * 2 ** 31))

type Kind = "workflow" | "template" | "runner"

type Op =
  | { readonly _tag: "create"; readonly kind: Kind }
  | { readonly _tag: "list"; readonly kind: Kind | "managed" }
  | { readonly _tag: "get" | "update" | "delete" | "history" | "rerun" | "cancel" | "outputs" | "output" | "subscribe"; readonly kind: Kind; readonly target: number; readonly foreign: boolean }
  | { readonly _tag: "user" }

interface Step {
  readonly user: number
  readonly op: Op
}

const intFrom = (minimum: number, maximum: number) => Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum, maximum })))
const oneOf = <const A extends ReadonlyArray<string>>(values: A) => Arbitrary.schema(Schema.Literals(values))
const kinds = ["workflow", "template", "runner"] as const

/** Ops weighted as create 4, list 2, user 1, access 8 (out of 15). */
const op: Arbitrary.Arbitrary<Op> = Arbitrary.flatMap(intFrom(0, 14), (weight): Arbitrary.Arbitrary<Op> =>
  weight < 4
    ? Arbitrary.map(oneOf(kinds), (kind) => ({ _tag: "create", kind }))
    : weight < 6
    ? Arbitrary.map(oneOf([...kinds, "managed"]), (kind) => ({ _tag: "list", kind }))
    : weight < 7
    ? Arbitrary.Constant({ _tag: "user" })
    : Arbitrary.all({
      _tag: oneOf(["get", "update", "delete", "history", "rerun", "cancel", "outputs", "output", "subscribe"]),
      kind: oneOf(kinds),
      target: intFrom(0, 2 ** 31 - 1),
      foreign: Arbitrary.schema(Schema.Boolean)
    }))

const step: Arbitrary.Arbitrary<Step> = Arbitrary.all({ user: intFrom(0, 2), op })

interface Owned {
  readonly kind: Kind
  readonly id: string
  readonly name: string
}

const templateForm = (name: string) => {
  const f = new FormData()
  f.append("name", name)
  f.append("description", "d")
  f.append("body", new Blob([JSON.stringify(smokeWorkflow())]), "t.json")
  return f
}

/** Builds the request of a step; undefined when it does not apply (e.g. history of a template). */
const requestOf = (op: Op, target: Owned | undefined, unique: string): { readonly path: string; readonly init: RequestInit } | undefined => {
  const base = (k: Kind) => `/v1/${k}`
  switch (op._tag) {
    case "user":
      return { path: "/v1/user", init: {} }
    case "list":
      return { path: op.kind === "managed" ? "/v1/managed-runner" : `${base(op.kind)}?per_page=100`, init: {} }
    case "create":
      switch (op.kind) {
        case "workflow":
          return { path: "/v1/workflow", init: { method: "POST", body: workflowForm({ name: unique }) } }
        case "template":
          return { path: "/v1/template", init: { method: "POST", body: templateForm(unique) } }
        case "runner":
          return { path: "/v1/runner", init: json({ name: unique, endpoint: "http://127.0.0.1:8188", headers: { "X-Owner": unique } }) }
      }
  }
  if (target === undefined) return undefined
  const at = `${base(target.kind)}/${target.id}`
  switch (op._tag) {
    case "get":
      return { path: at, init: {} }
    case "delete":
      return target.kind === "workflow" ? undefined : { path: at, init: { method: "DELETE" } }
    case "update":
      if (target.kind === "template") {
        const f = new FormData()
        f.append("description", `updated by ${unique}`)
        return { path: at, init: { method: "PUT", body: f } }
      }
      return target.kind === "runner" ? { path: at, init: { ...json({ tags: ["t"] }), method: "PATCH" } } : undefined
    case "history":
      return target.kind === "runner" ? { path: `${at}/history`, init: {} } : undefined
    case "rerun":
      return target.kind === "workflow" ? { path: `${at}/rerun`, init: { method: "POST", body: new FormData() } } : undefined
    case "cancel":
      return target.kind === "workflow" ? { path: `${at}/cancel`, init: { method: "POST" } } : undefined
    case "outputs":
      return target.kind === "workflow" ? { path: `${at}/outputs`, init: {} } : undefined
    case "output":
      return target.kind === "workflow" ? { path: `${at}/outputs/${target.id}`, init: {} } : undefined
    case "subscribe":
      return target.kind === "workflow" ? { path: `${at}/subscribe`, init: {} } : undefined
  }
}

const isolationSuite = (store: "memory" | "postgres") =>
  describe(`tenant isolation on the ${store} store (suite 5)`, () => {
    let server: TestServer
    let db: TestDatabase | undefined
    beforeAll(async () => {
      if (store === "postgres") {
        db = await TestDatabase.create()
        server = await startServer({ store: PgStoreLive({ url: Redacted.make(db.url()), maxConnections: 4 }) })
      } else {
        server = await startServer()
      }
    }, 60_000)
    afterAll(async () => {
      await server.close()
      await db?.drop()
    })

    it("never shows a user another user's resources, and answers 404 to every cross-user id", async () => {
      let requests = 0
      let crossUser = 0
      const property = async (steps: ReadonlyArray<Step>) => {
        // Fresh users per run: every resource below is known to belong to exactly one of them.
        const users = await Promise.all([server.user("plus"), server.user("plus"), server.user("plus")])
        const owned: Array<Array<Owned>> = [[], [], []]
        let counter = 0
        // Each user starts with one of each (a runner first: workflows need one).
        const seeded: Array<Step> = [0, 1, 2].flatMap((user) =>
          (["runner", "workflow", "template"] as const).map((kind): Step => ({ user, op: { _tag: "create", kind } }))
        )
        for (const { user, op } of [...seeded, ...steps]) {
          const unique = `u${user}-${SEED}-${counter++}-${users[user]!.id.slice(-6)}`
          let target: Owned | undefined
          let targetOwner = user
          if (op._tag !== "create" && op._tag !== "list" && op._tag !== "user") {
            const others = [0, 1, 2].filter((u) => u !== user)
            targetOwner = op.foreign ? others[op.target % 2]! : user
            const pool = owned[targetOwner]!.filter((o) => o.kind === op.kind)
            target = pool[op.target % Math.max(1, pool.length)]
          }
          const request = requestOf(op, target, unique)
          if (request === undefined) continue
          const headers = new Headers(request.init.headers)
          headers.set("authorization", users[user]!.auth["authorization"]!)
          const res = await server.fetch(request.path, { ...request.init, headers })
          requests++
          const type = res.headers.get("content-type") ?? ""
          let text = ""
          if (type.startsWith("text/event-stream")) await res.body?.cancel()
          else text = await res.text()
          // Another user's resource: 404, and the answer says nothing about it.
          if (target !== undefined && targetOwner !== user) {
            crossUser++
            expect([op._tag, request.path, res.status]).toEqual([op._tag, request.path, 404])
          }
          expect([op._tag, request.path, res.status < 500]).toEqual([op._tag, request.path, true])
          for (const [other, resources] of owned.entries()) {
            if (other === user) continue
            expect(text).not.toContain(users[other]!.id)
            for (const r of resources) {
              expect([op._tag, request.path, text.includes(r.id), text.includes(r.name)]).toEqual([op._tag, request.path, false, false])
            }
          }
          if (res.status === 201 && op._tag === "create") {
            const body = JSON.parse(text) as { id: string }
            owned[user]!.push({ kind: op.kind, id: body.id, name: unique })
          }
          if (res.status === 204 && op._tag === "delete" && target !== undefined) {
            owned[user]!.splice(owned[user]!.indexOf(target), 1)
          }
          // A rerun creates a workflow of the caller's (its name equals the original's).
          if (res.status === 201 && op._tag === "rerun" && target !== undefined) {
            owned[user]!.push({ kind: "workflow", id: (JSON.parse(text) as { id: string }).id, name: target.name })
          }
        }
      }
      const result = await Effect.runPromise(Arbitrary.checkEffect(
        Arbitrary.array(step, { minLength: 10, maxLength: 40 }),
        (steps) => Effect.as(Effect.tryPromise(() => property(steps)), true),
        { runs: store === "memory" ? 40 : 25, seed: SEED, maxShrinks: 20 }
      ))
      expect(Arbitrary.formatCheckFailure(result)).toBeUndefined()
      console.log(`isolation (${store}): seed ${SEED}, ${requests} requests, ${crossUser} of them with another user's id`)
      expect(crossUser).toBeGreaterThan(0)
    }, 240_000)
  })

isolationSuite("memory")
isolationSuite("postgres")
