/**
 * The process's own figures for `GET /metrics`, read at each scrape, under the names Prometheus's
 * node client uses (so existing dashboards and alerts apply): resident memory, V8's heap (used and
 * reserved), memory outside it, and CPU time. What an operator sizes `--max-old-space-size` or a
 * container's memory limit from (docs/deployment.md, "Memory of the process").
 */
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Ref from "effect/Ref"

const residentMemory = Metric.gauge("process_resident_memory_bytes", { description: "Resident memory size in bytes." })
const heapUsed = Metric.gauge("nodejs_heap_size_used_bytes", { description: "V8 heap in use, in bytes (live objects and garbage not yet collected)." })
const heapTotal = Metric.gauge("nodejs_heap_size_total_bytes", { description: "V8 heap reserved, in bytes." })
const external = Metric.gauge("nodejs_external_memory_bytes", { description: "Memory of C++ objects bound to JavaScript objects (buffers included), in bytes." })
const cpuUser = Metric.counter("process_cpu_user_seconds_total", { description: "User CPU time spent, in seconds.", incremental: true })
const cpuSystem = Metric.counter("process_cpu_system_seconds_total", { description: "System CPU time spent, in seconds.", incremental: true })

/**
 * CPU time already counted. Metrics are the process's (one registry, however many servers run
 * in it), so this is too: each scrape advances the counters by what was spent since the last.
 */
const counted = Ref.makeUnsafe<NodeJS.CpuUsage>({ user: 0, system: 0 })

/** Brings the gauges and counters up to the process's figures now. */
export const sampleProcessMetrics: Effect.Effect<void> = Effect.gen(function*() {
  const memory = process.memoryUsage()
  // Read and recorded in one step, so scrapes at once never count a stretch twice.
  const spent = yield* Ref.modify(counted, (before) => {
    const now = process.cpuUsage()
    return [{ user: now.user - before.user, system: now.system - before.system }, now]
  })
  yield* Effect.all([
    Metric.update(residentMemory, memory.rss),
    Metric.update(heapUsed, memory.heapUsed),
    Metric.update(heapTotal, memory.heapTotal),
    Metric.update(external, memory.external),
    Metric.update(cpuUser, spent.user / 1e6),
    Metric.update(cpuSystem, spent.system / 1e6)
  ], { discard: true })
})
