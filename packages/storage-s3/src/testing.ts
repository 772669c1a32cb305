/**
 * @wes/storage-s3/testing: a real S3-protocol server for tests and benchmarks, `fauxqs` (an
 * emulator of S3 over HTTP that the unmodified AWS SDK talks to: SigV4 requests, aws-chunked
 * streaming uploads with trailing checksums, multipart uploads, ranges, presigned URLs), run in a
 * child process on a free port of 127.0.0.1 so that its memory (it keeps objects in memory) is
 * not counted in the process under test.
 *
 *   const s3 = await startS3Server()        // or: yield* S3TestServer (scoped)
 *   S3BlobStoreLive({ location: { bucket: s3.bucket, prefix: "wes/" }, pathStyle: true, client: s3.client })
 *   // or the environment `wes serve` reads: { ...s3.env, WES_BLOB_STORE: `s3://${s3.bucket}/wes` }
 *   await s3.stop()
 */
import { ListObjectsV2Command, S3Client, type S3ClientConfig } from "@aws-sdk/client-s3"
import * as Effect from "effect/Effect"
import { spawn } from "node:child_process"
import { once } from "node:events"
import { dirname, join } from "node:path"
import { createInterface } from "node:readline"
import { fileURLToPath } from "node:url"

export interface S3TestServer {
  /** `http://127.0.0.1:<port>` */
  readonly endpoint: string
  /** A bucket made at start. */
  readonly bucket: string
  /** What an `S3Client` needs to reach it (endpoint, region, credentials, path-style). */
  readonly client: S3ClientConfig
  /** The same as environment variables of the SDK's chain (`AWS_ENDPOINT_URL_S3`, `AWS_REGION`, keys). */
  readonly env: Readonly<Record<string, string>>
  /** The objects of `bucket` (default: the one made at start) whose keys start with `prefix`, with their sizes (one page: 1,000). */
  readonly listObjects: (prefix: string, bucket?: string) => Promise<ReadonlyArray<{ readonly key: string; readonly size: number }>>
  /** Makes another bucket. */
  readonly createBucket: (name: string) => Promise<void>
  readonly stop: () => Promise<void>
}

// Started from the package's folder (src/ or dist/ is one level down), where `fauxqs` is installed.
const PACKAGE_DIR = join(dirname(fileURLToPath(import.meta.url)), "..")

// The server ends when its standard input closes: when the test process ends, however it ends.
const SERVER = `
import { buildApp } from "fauxqs"
const app = buildApp({ logger: false })
const address = await app.listen({ port: 0, host: "127.0.0.1" })
process.stdout.write(JSON.stringify({ port: new URL(address).port }) + "\\n")
process.stdin.on("end", () => app.close().finally(() => process.exit(0)))
process.stdin.resume()
`

const CREDENTIALS = { accessKeyId: "wes-test", secretAccessKey: "wes-test-secret" }
const REGION = "us-east-1"

/** Starts an S3 server on a free port of 127.0.0.1 with one empty bucket (`bucket`, default `wes-test`). */
export const startS3Server = async (options: { readonly bucket?: string } = {}): Promise<S3TestServer> => {
  const child = spawn(process.execPath, ["--input-type=module", "-e", SERVER], { cwd: PACKAGE_DIR, stdio: ["pipe", "pipe", "inherit"] })
  const exited = once(child, "exit")
  const lines = createInterface({ input: child.stdout })
  const [first] = (await Promise.race([once(lines, "line"), exited.then(([code]) => Promise.reject(new Error(`the S3 test server exited (${String(code)})`)))])) as [string]
  lines.close()
  const endpoint = `http://127.0.0.1:${(JSON.parse(first) as { port: string }).port}`
  const createBucket = async (name: string) => {
    // The emulator checks no signature: a plain CreateBucket request.
    const response = await fetch(`${endpoint}/${name}`, { method: "PUT" })
    if (!response.ok) throw new Error(`could not create the bucket ${name}: ${response.status} ${await response.text()}`)
  }
  const stop = async () => {
    if (child.exitCode !== null) return
    child.stdin.end()
    await exited
  }
  const bucket = options.bucket ?? "wes-test"
  await createBucket(bucket).catch(async (e: unknown) => {
    await stop()
    throw e
  })
  const client = { endpoint, region: REGION, credentials: CREDENTIALS, forcePathStyle: true }
  const listObjects = async (prefix: string, inBucket = bucket) => {
    const s3 = new S3Client(client)
    try {
      const listed = await s3.send(new ListObjectsV2Command({ Bucket: inBucket, Prefix: prefix }))
      return (listed.Contents ?? []).map((o) => ({ key: o.Key ?? "", size: o.Size ?? 0 }))
    } finally {
      s3.destroy()
    }
  }
  return {
    endpoint,
    bucket,
    client,
    listObjects,
    env: { AWS_ENDPOINT_URL_S3: endpoint, AWS_REGION: REGION, AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey },
    createBucket,
    stop
  }
}

/** `startS3Server` as a scoped effect: stopped when the scope closes. */
export const S3TestServer = (options: { readonly bucket?: string } = {}) =>
  Effect.acquireRelease(Effect.promise(() => startS3Server(options)), (server) => Effect.promise(() => server.stop()))
