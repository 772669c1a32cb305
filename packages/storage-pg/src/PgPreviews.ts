/**
 * Live previews over PostgreSQL, for any number of instances: the dispatcher driving a run upserts
 * its workflow's latest preview (at most twice a second, core's LivePreviews.ts) into the
 * UNLOGGED `workflow_previews` and NOTIFYs the workflow id alone (a preview rarely fits NOTIFY's
 * 8 KB); an instance with subscribers of that workflow reads the row once and hands it to each
 * (core's `makePreviewSlots`: one slot per subscriber, overwritten). A read still running when
 * the next NOTIFY comes is replaced by a new one (latest wins). After every (re)connection of the
 * LISTEN connection, followed workflows are read again.
 */
import { PgClient } from "@effect/sql-pg"
import { makePreviewSlots, StorageError, type WorkflowPreview, WorkflowPreviews } from "@wes/core"
import * as Effect from "effect/Effect"
import * as FiberMap from "effect/FiberMap"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { ListenChannel } from "./PgListener.js"
import { decodeFirst, isId, orStorageError, run } from "./Sql.js"

/** The NOTIFY channel of previews; every instance sharing a database must use the same. */
export const DEFAULT_PREVIEWS_CHANNEL = "wes_previews"

const PreviewRow = Schema.Struct({ node: Schema.NullOr(Schema.String), content_type: Schema.String, image: Schema.Uint8Array })
const decodePreview = decodeFirst(PreviewRow)

const asBuffer = (bytes: Uint8Array): Buffer => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)

/** The previews store on the `PgClient` in context, and the channel its listener must follow (PgStore.ts). */
export const makePgPreviews = (channel: string = DEFAULT_PREVIEWS_CHANNEL) =>
  Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const slots = makePreviewSlots()
    const runRead = yield* FiberMap.runtime(yield* FiberMap.make<string>())<never>()

    const latest = (id: string): Effect.Effect<Option.Option<WorkflowPreview>, StorageError> =>
      run(sql`SELECT node, content_type, image FROM workflow_previews WHERE workflow_id = ${id}`).pipe(
        Effect.flatMap(decodePreview),
        Effect.map(Option.map((row): WorkflowPreview => ({ workflow_id: id, ...row }))),
        orStorageError("previews.read")
      )

    /** Reads the workflow's preview once for every subscriber here. */
    const deliver = (id: string) =>
      void runRead(id, latest(id).pipe(
        Effect.map(Option.map(slots.offer)),
        Effect.catch((e) => Effect.logWarning("could not read a preview", { workflow_id: id, error: e.message }))
      ))

    const listen: ListenChannel = {
      channel,
      onPayload: (payload) =>
        Effect.sync(() => {
          const id = payload.toLowerCase()
          if (slots.listening(id)) deliver(id)
        }),
      onConnected: Effect.sync(() => slots.followed().forEach(deliver))
    }

    const notAnId = Effect.fail(new StorageError({ message: "PostgreSQL store: previews need a UUID workflow id" }))
    const previews = WorkflowPreviews.of({
      publish: (p) =>
        !isId(p.workflow_id) ? notAnId : run(sql`WITH up AS (
            INSERT INTO workflow_previews (workflow_id, node, content_type, image, updated_at)
            VALUES (${p.workflow_id}, ${p.node}, ${p.content_type}, ${asBuffer(p.image)}, now())
            ON CONFLICT (workflow_id) DO UPDATE
              SET node = EXCLUDED.node, content_type = EXCLUDED.content_type, image = EXCLUDED.image, updated_at = EXCLUDED.updated_at
            RETURNING workflow_id
          )
          SELECT pg_notify(${channel}::text, workflow_id::text) FROM up`).pipe(Effect.asVoid, orStorageError("previews.publish")),
      clear: (id) =>
        !isId(id) ? Effect.void : run(sql`DELETE FROM workflow_previews WHERE workflow_id = ${id}`).pipe(Effect.asVoid, orStorageError("previews.clear")),
      subscribe: (workflowId) => {
        const id = workflowId.toLowerCase()
        if (!isId(id)) return Stream.never
        // Registered before the first read: a preview published in between is not missed.
        return Stream.unwrap(Effect.map(slots.listen(id), (take) =>
          Stream.concat(
            Stream.flatMap(Stream.fromEffect(latest(id)), (now) => Stream.fromIterable(Option.toArray(now))),
            Stream.fromEffectRepeat(take)
          )))
      }
    })
    return { previews, listen }
  })
