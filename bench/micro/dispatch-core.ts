/**
 * CPU per workflow of core's dispatch path alone, from create to completed: the memory store, the
 * use case, the dispatcher, and a runner gateway answered in-process (no HTTP, no WebSocket: each
 * submitted prompt "runs" at once and its events come through the events stream, as a ComfyUI's
 * would). The part of B2's CPU per workflow that WES's own code costs.
 *
 *   pnpm --filter @wes/bench exec tsx micro/dispatch-core.ts [workflows = 4000] [rounds = 3]
 */
import {
  AccountService,
  PlatformLive,
  type PromptHistory,
  RunnerGateway,
  RunnerRequestFailed,
  type RunnerEvent,
  RunnerProbe,
  RunnerService,
  TierPolicy,
  useCasesLayer,
  WorkflowRepository,
  WorkflowService
} from "@wes/core"
import { MemoryStoreLive } from "@wes/storage-memory"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"

const runners = 8
const graph = (i: number) => ({
  "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: i } },
  "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "x" } }
})

/** Per runner: a queue of events its socket "sends"; a post enqueues the prompt's whole run. */
const sockets = new Map<string, Queue.Queue<RunnerEvent>>()
const done: PromptHistory = { outcome: "success", outputs: [], started_at: null, completed_at: null, error: null }
const gateway = Layer.succeed(RunnerGateway, RunnerGateway.of({
  probe: () => Effect.succeed({ version: "0.3.64", devices: [], jobs_api: false }),
  nodeReplacements: () => Effect.succeedNone,
  // Capabilities stay unknown: every runner stays eligible.
  objectInfo: (runner) => Effect.fail(new RunnerRequestFailed({ runner_id: runner.id, status: 404, message: "no object_info" })),
  uploadInput: () => Effect.die(new Error("no uploads")),
  submit: (runner, p) =>
    Effect.flatMap(Effect.sync(() => sockets.get(runner.id)!), (q) =>
      Queue.offerAll(q, [
        { _tag: "QueueChanged", queue_remaining: 1 },
        { _tag: "ExecutionStart", prompt_id: p.prompt_id, timestamp: null },
        { _tag: "ExecutionCached", prompt_id: p.prompt_id, nodes: [] },
        { _tag: "Executing", prompt_id: p.prompt_id, node: "1" },
        { _tag: "Executing", prompt_id: p.prompt_id, node: "2" },
        { _tag: "Executed", prompt_id: p.prompt_id, node: "2", output: null },
        { _tag: "PromptDone", prompt_id: p.prompt_id },
        { _tag: "QueueChanged", queue_remaining: 0 }
      ])).pipe(Effect.as({ prompt_id: p.prompt_id, number: 1 })),
  queue: () => Effect.succeed({ running: [], pending: [] }),
  history: () => Effect.succeed(Option.some(done)),
  status: () => Effect.succeed({ _tag: "Finished" as const, history: done }),
  cancel: () => Effect.void,
  download: () => Effect.die(new Error("no outputs")),
  events: (runner) =>
    Effect.map(Queue.unbounded<RunnerEvent>(), (q) => {
      sockets.set(runner.id, q)
      Queue.offerUnsafe(q, { _tag: "Connected" })
      return q
    })
}))

const unlimited = { active_workflows: 1e7, workflows_per_day: 1e7, templates: 1e6, runners: 1e4, workflow_params: 200 }
const n = Number(process.argv[2] ?? 4000)
const rounds = Number(process.argv[3] ?? 3)
for (let r = 0; r < rounds; r++) {
  const runtime = ManagedRuntime.make(useCasesLayer({ dispatcher: { concurrencyPerRunner: 16 } }).pipe(
    Layer.provideMerge(Layer.mergeAll(MemoryStoreLive, gateway, RunnerProbe.Off, TierPolicy.layer({ free: unlimited }), PlatformLive))
  ))
  const user = await runtime.runPromise(Effect.flatMap(AccountService, (a) => a.createUser({ tier: "free" })))
  for (let i = 0; i < runners; i++) await runtime.runPromise(Effect.flatMap(RunnerService, (s) => s.create(user, { name: `r${i}`, endpoint: `http://r${i}.test` })))
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  await runtime.runPromise(Effect.forEach(Array.from({ length: n }, (_, i) => i), (i) =>
    Effect.flatMap(WorkflowService, (s) => s.create(user, { name: `w${i}`, workflow_json: graph(i) })), { concurrency: 16, discard: true }))
  for (;;) {
    if ((await runtime.runPromise(Effect.flatMap(WorkflowRepository, (repo) => repo.countActive(user.id)))) === 0) break
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  const cpu = process.cpuUsage(cpu0)
  console.log(`round ${r + 1}: ${n} workflows, ${((cpu.user + cpu.system) / n).toFixed(0)} µs of CPU each (create -> completed), ${(n / ((performance.now() - t0) / 1000)).toFixed(0)}/s`)
  await runtime.dispose()
  sockets.clear()
}
