/**
 * `wes serve` with WES_BLOB_STORE=s3://bucket/prefix (issue 33, item 1) against a real S3-protocol
 * server (@wes/storage-s3/testing): a workflow's input reaches the runner and its output is an
 * object of the bucket under the prefix, downloaded through WES as the runner's bytes; a bucket that does not
 * exist stops the server at start with a line naming WES_BLOB_STORE.
 */
import { largeOutputBytes } from "@wes/runner-client/testing"
import { startS3Server } from "@wes/storage-s3/testing"
import * as crypto from "node:crypto"
import { describe, expect, it } from "vitest"
import { readJson, type WorkflowDetailJson } from "./harness.js"
import { addRunner, createUser, createWorkflow, type Instance, startInstance, type TestUser } from "./instances.js"
import { poll } from "./polling.js"
import { processSuite } from "./process-suite.js"

const suite = processSuite()
const MiB = 1024 * 1024
// More than one 8 MiB part: the output is a multipart upload.
const OUTPUT_BYTES = 9 * MiB + 123

const sha256 = async (chunks: AsyncIterable<Uint8Array>) => {
  const hash = crypto.createHash("sha256")
  let bytes = 0
  for await (const chunk of chunks) {
    hash.update(chunk)
    bytes += chunk.length
  }
  return { bytes, sha256: hash.digest("hex") }
}

const awaitEnd = (wes: Instance, user: TestUser, id: string) =>
  poll(`workflow ${id} to end`, async () => {
    const w = await readJson<WorkflowDetailJson>(await wes.fetch(`/v1/workflow/${id}`, { headers: user.auth }))
    return ["completed", "failed", "invalid", "cancelled"].includes(w.status) ? w : undefined
  }, 60_000, 100)

describe("wes serve with an S3 blob store", () => {
  it("passes a workflow's input through the bucket and keeps its output there; the output downloaded through WES is the runner's bytes", async () => {
    const s3 = await startS3Server()
    suite.closeAfter({ close: s3.stop })
    const database = await suite.database()
    const wes = await startInstance("S3", database.url(), { ...s3.env, WES_BLOB_STORE: `s3://${s3.bucket}/wes-blobs` })
    const [fake] = await suite.fakes(1, { cache: false })
    const user = await createUser(wes)
    await addRunner(wes, user, "r", fake!.url)

    const workflow = {
      "1": { class_type: "FakeLargeOutput", inputs: { bytes: OUTPUT_BYTES, filename_prefix: "large/wes" } },
      "2": { class_type: "PreviewAny", inputs: { source: "$file(photo)" } }
    }
    const photo = crypto.randomBytes(300_000)
    const { id } = await createWorkflow(wes, user, workflow, { "$photo": [photo, "cat.png"] })
    const done = await awaitEnd(wes, user, id)
    expect([done.status, done.exception_message]).toEqual(["completed", null])
    // The runner got the input, read back from the bucket (where it is deleted once the workflow ends).
    const upload = fake!.uploads.find((u) => u.name?.startsWith(id) === true)
    expect(upload?.size).toBe(photo.length)

    const { outputs } = await readJson<{ outputs: ReadonlyArray<{ id: string; size: number }> }>(await wes.fetch(`/v1/workflow/${id}/outputs`, { headers: user.auth }))
    expect(outputs.map((o) => o.size)).toEqual([OUTPUT_BYTES])
    const download = await wes.fetch(`/v1/workflow/${id}/outputs/${outputs[0]!.id}`, { headers: user.auth })
    expect(download.status).toBe(200)
    expect(await sha256(download.body!)).toEqual(await sha256(largeOutputBytes(OUTPUT_BYTES)))

    const objects = (await s3.listObjects("wes-blobs/")).map((o) => [o.key.split("/").slice(0, 3).join("/"), o.size])
    expect(objects).toEqual([[`wes-blobs/outputs/${id}`, OUTPUT_BYTES]])
  })

  it("with WES_BLOB_REDIRECT=true a download answers 307 to a presigned URL of the bucket that serves the runner's bytes", async () => {
    const s3 = await startS3Server()
    suite.closeAfter({ close: s3.stop })
    const database = await suite.database()
    const wes = await startInstance("S3-redirect", database.url(), { ...s3.env, WES_BLOB_STORE: `s3://${s3.bucket}/wes-blobs`, WES_BLOB_REDIRECT: "true" })
    const [fake] = await suite.fakes(1, { cache: false })
    const user = await createUser(wes)
    await addRunner(wes, user, "r", fake!.url)
    const { id } = await createWorkflow(wes, user, { "1": { class_type: "FakeLargeOutput", inputs: { bytes: MiB, filename_prefix: "large/wes" } } })
    expect((await awaitEnd(wes, user, id)).status).toBe("completed")
    const { outputs } = await readJson<{ outputs: ReadonlyArray<{ id: string }> }>(await wes.fetch(`/v1/workflow/${id}/outputs`, { headers: user.auth }))
    const answer = await wes.fetch(`/v1/workflow/${id}/outputs/${outputs[0]!.id}`, { headers: user.auth, redirect: "manual" })
    expect(answer.status).toBe(307)
    const location = answer.headers.get("location") ?? ""
    expect(location.startsWith(`${s3.endpoint}/${s3.bucket}/wes-blobs/outputs/${id}/`)).toBe(true)
    // The presigned URL needs no WES token.
    const direct = await fetch(location)
    expect(direct.status).toBe(200)
    expect(await sha256(direct.body!)).toEqual(await sha256(largeOutputBytes(MiB)))
  })

  it("stops at start with a line naming WES_BLOB_STORE when the bucket does not exist", async () => {
    const s3 = await startS3Server()
    suite.closeAfter({ close: s3.stop })
    const database = await suite.database()
    const failed = await startInstance("S3-missing", database.url(), { ...s3.env, WES_BLOB_STORE: "s3://no-such-bucket/wes" }).then(
      () => undefined,
      (e: unknown) => String(e)
    )
    expect(failed).toContain(`"variable":"WES_BLOB_STORE"`)
    expect(failed).toContain(`the bucket \\"no-such-bucket\\" does not exist`)
  })
})
