/**
 * B4: the submit path. `POST /v1/workflow` as multipart: a 20 KB workflow (a LoadImage node
 * reading `$file(image)`) and a 256 KB image parameter, 50 connections, on the memory and the
 * PostgreSQL stores (dispatch off: this measures accepting work). Uploaded files go to a blob
 * directory on disk in both, emptied after each round. Baseline: a bare node:http + busboy
 * handler that parses the same request, parses the workflow JSON and keeps it in a Map.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { alternate, type Benchmark, paddedWorkflow, sleep } from "./lib/bench.js"
import { type Child, start } from "./lib/child.js"
import { load, type LoadResult, withCpu } from "./lib/load.js"
import { createSchema } from "./lib/pg.js"
import { fmt, ratio, type Row, verdict } from "./lib/report.js"
import { mean } from "./lib/stats.js"

const BOUNDARY = "wes-bench-b4-boundary"

/** The multipart body: name, workflow_json (file) and `$image` (a 256 KB PNG-typed file). */
export const submitBody = (): Buffer => {
  const workflow = paddedWorkflow(20 * 1024)
  const withImage = { ...workflow, "4": { class_type: "LoadImage", inputs: { image: "$file(image)" } } }
  const image = Buffer.alloc(256 * 1024)
  for (let i = 0; i < image.length; i++) image[i] = (i * 31 + 7) & 0xff
  const part = (headers: string, content: Buffer | string) =>
    Buffer.concat([Buffer.from(`--${BOUNDARY}\r\n${headers}\r\n\r\n`), Buffer.isBuffer(content) ? content : Buffer.from(content), Buffer.from("\r\n")])
  return Buffer.concat([
    part(`Content-Disposition: form-data; name="name"`, "bench submit"),
    part(`Content-Disposition: form-data; name="workflow_json"; filename="workflow.json"\r\nContent-Type: application/json`, JSON.stringify(withImage)),
    part(`Content-Disposition: form-data; name="$image"; filename="photo.png"\r\nContent-Type: image/png`, image),
    Buffer.from(`--${BOUNDARY}--\r\n`)
  ])
}

const blobDir = () => fs.mkdtempSync(path.join(os.tmpdir(), "wes-bench-b4-"))
/**
 * Empties a blob directory between rounds, once the server has finished the requests the load
 * generator left in flight; what it still writes meanwhile goes at the end of the run.
 */
const empty = async (dir: string) => {
  await sleep(500)
  for (const entry of fs.readdirSync(dir)) {
    try {
      fs.rmSync(path.join(dir, entry), { recursive: true, force: true, maxRetries: 5, retryDelay: 100 })
    } catch {
      // ENOTEMPTY while a late write lands: removed with the directory after the run.
    }
  }
}

export const b4: Benchmark = {
  id: "B4",
  title: "submit path: POST /v1/workflow (20 KB workflow + 256 KB image)",
  run: async (size) => {
    const body = submitBody()
    const seconds = size === "full" ? 5 : 1
    const rounds = size === "full" ? 3 : 1
    const schema = await createSchema()
    const memoryBlobs = blobDir()
    const pgBlobs = blobDir()
    const children: Array<Child<{ url: string }>> = []
    try {
      const memory = await start<{ url: string }>("servers/wes.ts", { BENCH_DISPATCH: "off", BENCH_BLOB_DIR: memoryBlobs })
      children.push(memory)
      const postgres = await start<{ url: string }>("servers/wes.ts", { BENCH_DISPATCH: "off", BENCH_BLOB_DIR: pgBlobs, BENCH_STORE: "postgres", DATABASE_URL: schema.url })
      children.push(postgres)
      const raw = await start<{ url: string }>("peers/raw-busboy.ts")
      children.push(raw)

      const headersFor = async (wes: Child<{ url: string }>) => {
        const { token } = await wes.call<{ token: string }>("setup", { runners: ["http://127.0.0.1:9"] })
        return { authorization: `Bearer ${token}`, "content-type": `multipart/form-data; boundary=${BOUNDARY}` }
      }
      const sides = {
        memory: { child: memory, headers: await headersFor(memory), dir: memoryBlobs as string | undefined },
        postgres: { child: postgres, headers: await headersFor(postgres), dir: pgBlobs as string | undefined },
        raw: { child: raw, headers: { "content-type": `multipart/form-data; boundary=${BOUNDARY}` }, dir: undefined as string | undefined }
      }
      // One answer checked by hand before any load: the runs below count only 201s as success.
      for (const [name, side] of Object.entries(sides)) {
        const res = await fetch(`${side.child.ready.url}/v1/workflow`, { method: "POST", headers: side.headers, body })
        if (res.status !== 201) throw new Error(`B4 ${name}: ${res.status} ${await res.text()}`)
        await res.arrayBuffer()
      }
      const run = (side: (typeof sides)[keyof typeof sides], duration: number) => async () => {
        const result = await withCpu(side.child, () =>
          load({ url: `${side.child.ready.url}/v1/workflow`, method: "POST", connections: 50, durationSeconds: duration, headers: side.headers, body }))
        if (side.dir !== undefined) await empty(side.dir)
        return result
      }
      // Warm-up (untimed, long enough for V8 to optimise each side's path: docs/decisions.md, "B1 is
      // measured warm"), then alternating rounds: memory and PostgreSQL against the baseline.
      const warmUp = size === "full" ? 3 : 1
      await run(sides.memory, warmUp)()
      await run(sides.postgres, warmUp)()
      await run(sides.raw, warmUp)()
      const mem = await alternate(rounds, run(sides.memory, seconds), run(sides.raw, seconds))
      const pgr = await alternate(rounds, run(sides.postgres, seconds), run(sides.raw, seconds))

      const rps = (rs: ReadonlyArray<LoadResult>) => mean(rs.map((r) => r.rps))
      const p99 = (rs: ReadonlyArray<LoadResult>) => Math.max(...rs.map((r) => r.p99))
      const failed = (rs: ReadonlyArray<LoadResult>) => rs.reduce((n, r) => n + r.non2xx + r.errors, 0)
      const cpu = (rs: ReadonlyArray<LoadResult & { cpuPerRequest: number }>) => mean(rs.map((r) => r.cpuPerRequest))
      const rawAll = [...mem.b, ...pgr.b]
      const memRps = rps(mem.a)
      const pgRps = rps(pgr.a)
      return [
        { bench: "B4", metric: "memory store: requests/s (50 connections)", wes: fmt(memRps), peer: fmt(rps(mem.b)), ratio: ratio(memRps, rps(mem.b)), target: ">= 0.6x", met: verdict(memRps >= 0.6 * rps(mem.b)) },
        { bench: "B4", metric: "PostgreSQL store: requests/s (50 connections)", wes: fmt(pgRps), peer: fmt(rps(pgr.b)), ratio: ratio(pgRps, rps(pgr.b)), target: ">= 0.4x", met: verdict(pgRps >= 0.4 * rps(pgr.b)) },
        { bench: "B4", metric: "p99 latency, memory / PostgreSQL (ms)", wes: `${fmt(p99(mem.a))} / ${fmt(p99(pgr.a))}`, peer: fmt(p99(rawAll)), ratio: "", target: "", met: "n/a" },
        { bench: "B4", metric: "server CPU per request, memory / PostgreSQL (µs)", wes: `${fmt(cpu(mem.a))} / ${fmt(cpu(pgr.a))}`, peer: fmt(cpu(rawAll)), ratio: ratio(cpu(mem.a), cpu(rawAll)), target: "", met: "n/a" },
        { bench: "B4", metric: "failed requests", wes: fmt(failed(mem.a) + failed(pgr.a)), peer: fmt(failed(rawAll)), ratio: "", target: "0", met: verdict(failed(mem.a) + failed(pgr.a) === 0) }
      ] satisfies ReadonlyArray<Row>
    } finally {
      await Promise.all(children.map((c) => c.stop()))
      await schema.drop()
      for (const dir of [memoryBlobs, pgBlobs]) fs.rmSync(dir, { recursive: true, force: true })
    }
  }
}
