import { DeleteBucketCommand, ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3"
import { BlobStore, StorageError } from "@wes/core"
import { runBlobConformance } from "@wes/core/testing"
import { parseS3Location, S3BlobStoreLive } from "@wes/storage-s3"
import { startS3Server, S3TestServer, type S3TestServer as Server } from "@wes/storage-s3/testing"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

/** Waits until `condition` holds, checking every 20 ms, for at most 15 s. */
const until = async (what: string, condition: () => Promise<boolean>) => {
  const deadline = Date.now() + 15_000
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

const storeOn = (s3: Server, prefix = "wes/") =>
  S3BlobStoreLive({ location: { bucket: s3.bucket, prefix }, pathStyle: true, client: s3.client })

runBlobConformance(
  "S3 blob store conformance",
  Layer.unwrap(Effect.map(S3TestServer(), (s3) => storeOn(s3))),
  { describe, it, afterAll },
  { signsUrls: true }
)

describe("S3 blob store", () => {
  let s3: Server
  beforeAll(async () => {
    s3 = await startS3Server()
  })
  afterAll(() => s3.stop())
  const run = <A, E>(program: Effect.Effect<A, E, BlobStore>, prefix?: string) => Effect.runPromise(program.pipe(Effect.provide(storeOn(s3, prefix))))
  const objects = async (prefix: string) => {
    const client = new S3Client(s3.client)
    const listed = await client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: prefix }))
    client.destroy()
    return (listed.Contents ?? []).map((o) => [o.Key, o.Size])
  }

  it("keeps blobs under the location's prefix, so one bucket holds several deployments", async () => {
    await run(BlobStore.use((blobs) => blobs.put("outputs/w1/1/a.png", [new Uint8Array(3)], "image/png")), "one/")
    await run(BlobStore.use((blobs) => blobs.put("outputs/w1/1/a.png", [new Uint8Array(5)], "image/png")), "two/deep/")
    expect(await objects("one/")).toEqual([["one/outputs/w1/1/a.png", 3]])
    expect(await objects("two/")).toEqual([["two/deep/outputs/w1/1/a.png", 5]])
    expect(await run(BlobStore.use((blobs) => blobs.deletePrefix("outputs/w1/")), "one/")).toEqual({ blobs: 1, bytes: 3 })
    expect(await objects("two/")).toEqual([["two/deep/outputs/w1/1/a.png", 5]])
  })

  it("deletePrefix goes through every page of the listing (S3 lists at most 1,000 keys at a time)", async () => {
    const keys = Array.from({ length: 1005 }, (_, i) => `outputs/w5/${i % 7}/f${i}.png`)
    const deleted = await run(Effect.gen(function*() {
      const blobs = yield* BlobStore
      yield* Effect.forEach(keys, (key) => blobs.put(key, [new Uint8Array(2)], "image/png"), { concurrency: 16, discard: true })
      return yield* blobs.deletePrefix("outputs/w5/")
    }))
    expect(deleted).toEqual({ blobs: 1005, bytes: 2010 })
    expect(await objects("wes/outputs/w5/")).toEqual([])
  })

  it("signs a URL that serves the blob directly, with its file name and type, for the time asked", async () => {
    const url = await run(Effect.gen(function*() {
      const blobs = yield* BlobStore
      yield* blobs.put("outputs/w2/1/ComfyUI_00001_.webm", [new TextEncoder().encode("video bytes")], "video/webm")
      return Option.getOrThrow(yield* blobs.signedUrl("outputs/w2/1/ComfyUI_00001_.webm", { content_type: "video/webm", content_disposition: "inline; filename=ComfyUI_00001_.webm", expires_in_seconds: 120 }))
    }))
    const parsed = new URL(url)
    expect([parsed.origin, parsed.pathname]).toEqual([s3.endpoint, `/${s3.bucket}/wes/outputs/w2/1/ComfyUI_00001_.webm`])
    expect(parsed.searchParams.get("X-Amz-Expires")).toBe("120")
    expect(parsed.searchParams.get("response-content-disposition")).toBe("inline; filename=ComfyUI_00001_.webm")
    expect(parsed.searchParams.get("response-content-type")).toBe("video/webm")
    const response = await fetch(url)
    expect([response.status, await response.text()]).toEqual([200, "video bytes"])
  })

  it("an interrupted upload is aborted: no multipart upload is left in the bucket", async () => {
    await s3.createBucket("wes-abort")
    const client = new S3Client(s3.client)
    let sentAll = () => {}
    const sent = new Promise<void>((resolve) => (sentAll = resolve))
    // 20 MiB (two 8 MiB parts sent, a third begun), then a client that never sends the rest.
    const content = Stream.range(1, 20).pipe(
      Stream.map(() => new Uint8Array(1024 * 1024)),
      Stream.concat(Stream.fromEffect(Effect.sync(() => sentAll())).pipe(Stream.drain)),
      Stream.concat(Stream.never)
    )
    try {
      await Effect.runPromise(Effect.gen(function*() {
        const blobs = yield* BlobStore
        const upload = yield* Effect.forkChild(blobs.put("inputs/w3/p/big.bin", content, "application/octet-stream"))
        yield* Effect.promise(() => sent)
        yield* Fiber.interrupt(upload)
      }).pipe(Effect.provide(S3BlobStoreLive({ location: { bucket: "wes-abort", prefix: "" }, pathStyle: true, client: s3.client }))))
      // S3 refuses to delete a bucket with an object or a multipart upload in progress: it succeeds once the abort arrived.
      await until("the bucket to be empty", () => client.send(new DeleteBucketCommand({ Bucket: "wes-abort" })).then(() => true, () => false))
    } finally {
      client.destroy()
    }
  })

  it("a failing upload stream fails the put with its own error and leaves nothing", async () => {
    const error = await run(BlobStore.use((blobs) =>
      blobs.put("inputs/w4/p/a.bin", Stream.concat(Stream.make(new Uint8Array(6 * 1024 * 1024)), Stream.fail(new StorageError({ message: "client went away" }))), "text/plain")
    ).pipe(Effect.flip))
    expect(error.message).toBe("client went away")
    expect(await objects("wes/inputs/w4/")).toEqual([])
  })
})

describe("S3 blob store at start", () => {
  it("fails with a message naming the problem when the bucket does not exist", async () => {
    const s3 = await startS3Server()
    try {
      const error = await Effect.runPromise(Layer.build(S3BlobStoreLive({ location: { bucket: "no-such-bucket", prefix: "" }, pathStyle: true, client: s3.client })).pipe(Effect.scoped, Effect.flip))
      expect(error.message).toContain(`the bucket "no-such-bucket" does not exist`)
    } finally {
      await s3.stop()
    }
  })

  it("fails with a message naming the endpoint setting when S3 cannot be reached", async () => {
    const s3 = await startS3Server()
    await s3.stop()
    const error = await Effect.runPromise(Layer.build(S3BlobStoreLive({ location: { bucket: "wes-test", prefix: "" }, pathStyle: true, client: { ...s3.client, maxAttempts: 1 } })).pipe(Effect.scoped, Effect.flip))
    expect(error.message).toContain("S3 cannot be reached (check AWS_ENDPOINT_URL_S3 and AWS_REGION)")
  })

  it("reads s3://bucket/prefix and refuses what is not one", () => {
    expect(parseS3Location("s3://wes-media/prod/blobs")).toEqual({ location: { bucket: "wes-media", prefix: "prod/blobs/" } })
    expect(parseS3Location("s3://wes-media")).toEqual({ location: { bucket: "wes-media", prefix: "" } })
    expect(parseS3Location("s3://wes-media/")).toEqual({ location: { bucket: "wes-media", prefix: "" } })
    for (const bad of ["https://wes-media/x", "s3://", "s3://Upper/x", "s3://wes-media/../x", "s3://wes-media/a b"]) {
      expect(parseS3Location(bad)).toHaveProperty("error")
    }
  })
})
