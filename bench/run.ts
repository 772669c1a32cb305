/**
 * `pnpm bench [B1 B3 ...] [--tiny]`: runs the benchmarks (all by default) with their peers in the
 * same invocation, prints the table, and writes it with the machine's description to BENCHMARKS.md
 * (full size only). `--tiny` runs each once at a tiny size (CI: so none rots); figures never fail.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { b1 } from "./b1-latency.js"
import { b2 } from "./b2-throughput.js"
import { b3 } from "./b3-read.js"
import { b4 } from "./b4-submit.js"
import { b5 } from "./b5-sse.js"
import { b6 } from "./b6-cross.js"
import { b7 } from "./b7-auth.js"
import { b8 } from "./b8-memory.js"
import { b9 } from "./b9-claim.js"
import { b10 } from "./b10-webhooks.js"
import { b11 } from "./b11-media.js"
import { b12 } from "./b12-agent.js"
import type { Benchmark, Size } from "./lib/bench.js"
import { repoRoot } from "./lib/child.js"
import { describeMachine } from "./lib/machine.js"
import { markdown, type Row } from "./lib/report.js"

const all: ReadonlyArray<Benchmark> = [b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11, b12]

const args = process.argv.slice(2)
const size: Size = args.includes("--tiny") || process.env["BENCH_SIZE"] === "tiny" ? "tiny" : "full"
const wanted = args.filter((a) => !a.startsWith("--")).map((a) => a.toUpperCase())
const selected = wanted.length === 0 ? all : all.filter((b) => wanted.includes(b.id))
if (selected.length === 0) {
  console.error(`No benchmark named ${wanted.join(", ")}; known: ${all.map((b) => b.id).join(", ")}`)
  process.exit(2)
}

const BEGIN = "<!-- bench:table (written by `pnpm bench`) -->"
const END = "<!-- /bench:table -->"

const main = async () => {
  const began = Date.now()
  const machine = await describeMachine()
  console.log(`Machine: ${machine}\nSize: ${size}\n`)
  const rows: Array<Row> = []
  for (const b of selected) {
    const started = Date.now()
    console.log(`${b.id} ${b.title} ...`)
    try {
      const result = await b.run(size)
      rows.push(...result)
      console.log(markdown(result))
    } catch (e) {
      console.error(`${b.id} failed:`, e)
      rows.push({ bench: b.id, metric: "run", wes: "error", peer: "", ratio: "", target: "", met: "no" })
      process.exitCode = 1
    }
    console.log(`(${((Date.now() - started) / 1000).toFixed(1)} s)\n`)
  }
  const table = markdown(rows)
  console.log(table)
  if (size === "full" && wanted.length === 0) {
    // BENCHMARKS.md: the generated part sits between markers; the notes around it are kept.
    const file = path.join(repoRoot, "BENCHMARKS.md")
    const generated = [
      BEGIN,
      `Latest full run: ${new Date().toISOString()}, ${((Date.now() - began) / 60_000).toFixed(1)} min.`,
      "",
      `Machine: ${machine}.`,
      "",
      table,
      END
    ].join("\n")
    const previous = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : ""
    const from = previous.indexOf(BEGIN)
    const to = previous.indexOf(END)
    const doc = from !== -1 && to > from
      ? previous.slice(0, from) + generated + previous.slice(to + END.length)
      : ["# Benchmarks", "", "Reproduce: `pnpm install && pnpm bench` (all, with their peers, alternating rounds), or `pnpm bench B3` for one.", "", generated, ""].join("\n")
    fs.writeFileSync(file, doc)
  }
}

main()
