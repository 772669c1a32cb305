/**
 * B11: large media through WES, with bounded memory.
 *  (a) A 1 GiB output (the fake runner's `FakeLargeOutput`, generated as it is read): copied from
 *      the runner's `/view` into the blob store (the workflow's `transfer_ms`), then downloaded by
 *      curl from WES; each leg's throughput against curl fetching the same file straight from the
 *      same fake. WES's RSS growth: its peak (`VmHWM`, reset before) over its RSS before. On the
 *      local-directory store and on the S3 store (a local S3 server, @wes/storage-s3/testing).
 *  (b) A 100 MiB multipart input (`POST /v1/workflow` with a `$data` file, dispatch off): requests/s
 *      at 2 connections against a bare node:http + busboy server streaming the part to a file, and
 *      WES's RSS growth over the run.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { alternate, type Benchmark } from "./lib/bench.js"
import { type Child, start } from "./lib/child.js"
import { load } from "./lib/load.js"
import { curlDownload, largeForm, memoryOf, resetPeak } from "./lib/media.js"
import { fmt, ratio, type Row, verdict } from "./lib/report.js"
import { mean } from "./lib/stats.js"

const MiB = 1024 * 1024
const BOUNDARY = "wes-bench-b11-boundary"
const RSS_BOUND = 64 * MiB

interface Wes {
  readonly child: Child<{ url: string }>
  readonly auth: Record<string, string>
}

const startWes = async (env: Record<string, string>, runners: ReadonlyArray<string>): Promise<Wes> => {
  const child = await start<{ url: string }>("servers/wes.ts", env)
  const { token } = await child.call<{ token: string }>("setup", { runners })
  return { child, auth: { authorization: `Bearer ${token}` } }
}

const json = async <A>(res: Response): Promise<A> => {
  if (!res.ok) throw new Error(`B11: ${res.url} answered ${res.status}: ${await res.text()}`)
  return (await res.json()) as A
}

/** One output round: a workflow making a `bytes` output, run to completion; the copy's and the download's figures. */
const outputRound = async (wes: Wes, bytes: number) => {
  const pid = wes.child.process.pid!
  resetPeak(pid)
  const before = memoryOf(pid).rss
  const workflow = { "1": { class_type: "FakeLargeOutput", inputs: { bytes, filename_prefix: "bench/b11" } } }
  const form = new FormData()
  form.append("name", "b11 output")
  form.append("workflow_json", JSON.stringify(workflow))
  const { id } = await json<{ id: string }>(await fetch(`${wes.child.ready.url}/v1/workflow`, { method: "POST", headers: wes.auth, body: form }))
  let detail: { status: string; transfer_ms: number | null; exception_message: string | null }
  for (;;) {
    detail = await json(await fetch(`${wes.child.ready.url}/v1/workflow/${id}`, { headers: wes.auth }))
    if (!["accepted", "uploaded", "queued", "running"].includes(detail.status)) break
    await new Promise((r) => setTimeout(r, 100))
  }
  if (detail.status !== "completed") throw new Error(`B11: the output workflow ended ${detail.status}: ${detail.exception_message}`)
  const { outputs } = await json<{ outputs: Array<{ id: string; size: number; filename: string; subfolder: string }> }>(
    await fetch(`${wes.child.ready.url}/v1/workflow/${id}/outputs`, { headers: wes.auth })
  )
  const output = outputs[0]!
  const download = await curlDownload(`${wes.child.ready.url}/v1/workflow/${id}/outputs/${output.id}`, wes.auth)
  if (download.bytes !== bytes || output.size !== bytes) throw new Error(`B11: ${download.bytes} bytes downloaded, ${output.size} stored, of ${bytes}`)
  return { copySeconds: detail.transfer_ms! / 1000, downloadSeconds: download.seconds, growth: memoryOf(pid).peak - before, file: output }
}

/** The runner's `/view` URL of a file WES copied (its output record keeps the runner's name and sub folder). */
const viewUrl = (fakeUrl: string, file: { readonly filename: string; readonly subfolder: string }) =>
  `${fakeUrl}/view?${new URLSearchParams({ filename: file.filename, subfolder: file.subfolder, type: "output" })}`

/** Rows of (a) on one store. */
const outputRows = async (store: string, env: Record<string, string>, size: "tiny" | "full", fakeUrl: string): Promise<ReadonlyArray<Row>> => {
  const bytes = size === "full" ? 1024 * MiB : 16 * MiB
  const rounds = size === "full" ? 3 : 1
  const wes = await startWes(env, [fakeUrl])
  try {
    // Warm-up: code loaded and pools opened once are not counted.
    await outputRound(wes, 4 * MiB)
    // curl fetches the file of WES's latest round from the fake (the first round is WES's).
    let latest = ""
    const { a, b } = await alternate(rounds, async () => {
      const round = await outputRound(wes, bytes)
      latest = viewUrl(fakeUrl, round.file)
      return round
    }, () => curlDownload(latest))
    const curl = bytes / mean(b.map((r) => r.seconds))
    const copy = bytes / mean(a.map((r) => r.copySeconds))
    const down = bytes / mean(a.map((r) => r.downloadSeconds))
    const growth = Math.max(...a.map((r) => r.growth))
    const gb = `${fmt(bytes / MiB)} MiB`
    return [
      { bench: "B11", metric: `${store}: ${gb} output, runner -> store (MB/s; peer: curl of /view)`, wes: fmt(copy / MiB), peer: fmt(curl / MiB), ratio: ratio(copy, curl), target: ">= 0.7x", met: verdict(copy >= 0.7 * curl) },
      { bench: "B11", metric: `${store}: ${gb} output, store -> client (MB/s, curl)`, wes: fmt(down / MiB), peer: fmt(curl / MiB), ratio: ratio(down, curl), target: ">= 0.7x", met: verdict(down >= 0.7 * curl) },
      { bench: "B11", metric: `${store}: WES RSS growth, copy + download (MB)`, wes: fmt(growth / MiB, 1), peer: "", ratio: "", target: "<= 64 MB", met: verdict(growth <= RSS_BOUND) }
    ]
  } finally {
    await wes.child.stop()
  }
}

/** Rows of (b): `count` uploads of `bytes` at 2 connections, WES against busboy. */
const inputRows = async (size: "tiny" | "full"): Promise<ReadonlyArray<Row>> => {
  const bytes = size === "full" ? 100 * MiB : 4 * MiB
  const seconds = size === "full" ? 10 : 1
  const blobs = fs.mkdtempSync(path.join(os.tmpdir(), "wes-bench-b11-"))
  const workflow = { "1": { class_type: "PreviewAny", inputs: { source: "$file(data)" } } }
  const body = largeForm(workflow, bytes, BOUNDARY)
  const wes = await startWes({ BENCH_DISPATCH: "off", BENCH_BLOB_DIR: blobs }, ["http://127.0.0.1:9"])
  const peer = await start<{ url: string }>("peers/raw-busboy-file.ts")
  try {
    const pid = wes.child.process.pid!
    const headers = { "content-type": `multipart/form-data; boundary=${BOUNDARY}` }
    const run = (url: string, auth: Record<string, string>) =>
      load({ url: `${url}/v1/workflow`, method: "POST", headers: { ...headers, ...auth }, body, connections: 2, durationSeconds: seconds })
    await run(wes.child.ready.url, wes.auth)
    resetPeak(pid)
    const before = memoryOf(pid).rss
    const { a, b } = await alternate(size === "full" ? 2 : 1, () => run(wes.child.ready.url, wes.auth), () => run(peer.ready.url, {}))
    const growth = memoryOf(pid).peak - before
    // Completed requests over the run: a few per second, too few for autocannon's per-second average.
    const ours = mean(a.map((r) => r.total / seconds))
    const theirs = mean(b.map((r) => r.total / seconds))
    const mb = `${fmt(bytes / MiB)} MiB`
    return [
      { bench: "B11", metric: `${mb} multipart input: requests/s (2 connections; peer: node + busboy to a file)`, wes: fmt(ours, 2), peer: fmt(theirs, 2), ratio: ratio(ours, theirs), target: ">= 0.5x", met: verdict(ours >= 0.5 * theirs) },
      { bench: "B11", metric: `${mb} multipart input: WES RSS growth (MB)`, wes: fmt(growth / MiB, 1), peer: "", ratio: "", target: "<= 64 MB", met: verdict(growth <= RSS_BOUND) },
      { bench: "B11", metric: `${mb} multipart input: failed requests`, wes: fmt(a.reduce((n, r) => n + r.errors + r.non2xx, 0)), peer: fmt(b.reduce((n, r) => n + r.errors + r.non2xx, 0)), ratio: "", target: "0", met: verdict(a.every((r) => r.errors + r.non2xx === 0)) }
    ]
  } finally {
    await Promise.all([wes.child.stop(), peer.stop()])
    fs.rmSync(blobs, { recursive: true, force: true })
  }
}

export const b11: Benchmark = {
  id: "B11",
  title: "large media: a 1 GiB output runner -> store -> client, a 100 MiB multipart input",
  run: async (size) => {
    const fakes = await start<{ urls: ReadonlyArray<string> }>("servers/fakes.ts", { FAKES: "1" })
    const blobs = fs.mkdtempSync(path.join(os.tmpdir(), "wes-bench-b11-"))
    try {
      const rows = [...await outputRows("local directory", { BENCH_BLOB_DIR: blobs }, size, fakes.ready.urls[0]!)]
      const s3 = await import("@wes/storage-s3/testing").then((m) => m.startS3Server({ bucket: "wes-bench" }))
      try {
        rows.push(...await outputRows("S3", { ...s3.env, BENCH_BLOB_STORE: `s3://${s3.bucket}/bench` }, size, fakes.ready.urls[0]!))
      } finally {
        await s3.stop()
      }
      return [...rows, ...await inputRows(size)]
    } finally {
      await fakes.stop()
      fs.rmSync(blobs, { recursive: true, force: true })
    }
  }
}
