/**
 * WES's core in memory, without a server: the use cases a backend embeds. Runners are registered
 * without the reachability probe and no runner client is wired in, so the workflow stays
 * `accepted` until it is cancelled; the runner client and dispatcher live in other packages.
 */
import {
  AccountService,
  PlatformLive,
  type RunnerEvent,
  RunnerGateway,
  RunnerProbe,
  RunnerService,
  RunnerUnreachable,
  TemplateService,
  TierPolicy,
  useCasesLayer,
  WorkflowService
} from "@wes/core"
import { MemoryStoreLive } from "@wes/storage-memory"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"

const noRunnerClient = (runner: { readonly id: string }) =>
  Effect.fail(new RunnerUnreachable({ runner_id: runner.id, message: "no runner client in this example" }))

const NoGateway = Layer.succeed(RunnerGateway, {
  probe: noRunnerClient,
  nodeReplacements: noRunnerClient,
  objectInfo: noRunnerClient,
  uploadInput: noRunnerClient,
  submit: noRunnerClient,
  queue: noRunnerClient,
  history: noRunnerClient,
  status: noRunnerClient,
  cancel: noRunnerClient,
  download: noRunnerClient,
  // No runner: a socket that never says anything.
  events: () => Queue.bounded<RunnerEvent>(1)
})

const WesInMemory = useCasesLayer().pipe(
  Layer.provideMerge(Layer.mergeAll(MemoryStoreLive, NoGateway, RunnerProbe.Off, TierPolicy.Default, PlatformLive))
)

const program = Effect.gen(function*() {
  const accounts = yield* AccountService
  const user = yield* accounts.createUser({ tier: "pro", email: "demo@example.com" })
  const issued = yield* accounts.issueToken(user.id, { name: "quickstart" })
  const principal = yield* accounts.authenticate(`Bearer ${issued.token}`)
  console.log("token", issued.token, "authenticates", principal.user.id)

  const runner = yield* (yield* RunnerService).create(user, { name: "local", endpoint: "http://127.0.0.1:8188", tags: ["gpu"] })
  console.log("runner", runner.id, runner.tags)

  const body = {
    "1": { class_type: "EmptyImage", inputs: { width: 64, height: 64, batch_size: 1, color: "$text(color, 255)" } },
    "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "quickstart/run" } }
  }
  const template = yield* (yield* TemplateService).create(user, { name: "solid", description: "A solid image", body })
  const workflows = yield* WorkflowService
  const workflow = yield* workflows.create(user, {
    name: "first",
    template_id: template.id,
    tags: "gpu",
    params: [{ field: "$color", value: { _tag: "Text", text: "16711680" } }]
  })
  console.log("workflow", workflow.id, workflow.status, (yield* workflows.get(user, workflow.id)).workflow_params)
  const cancelled = yield* workflows.cancel(user, workflow.id)
  console.log("cancelled", cancelled.status, "usage", (yield* accounts.currentUser(user)).usage)
})

Effect.runPromise(program.pipe(Effect.provide(WesInMemory), Effect.scoped)).catch((e) => {
  console.error(e)
  process.exitCode = 1
})
