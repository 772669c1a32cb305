/**
 * Model files in place before a prompt is posted (issue 34): on a runner reached through
 * `wes-agent`, the agent is asked to place every file the workflow declares (`RunnerAgents.provision`:
 * it downloads what is missing and verifies its sha256). Its progress goes out as `provisioning`
 * events (`{folder, filename, bytes, total, percent}`), at most `PROVISIONING_EVENTS_PER_SECOND`
 * per workflow, each file's last progress and the very last always. A file that cannot be placed
 * fails the workflow naming it; an agent that does not answer fails the attempt like any runner
 * call (retried, then moved away: Submit.ts).
 *
 * A directly reachable runner is left alone: WES cannot write to its disk, and ComfyUI's own
 * validation rejects a prompt naming a file it lacks, naming the file.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { ModelFile } from "../domain/ModelFiles.js"
import type { RunnerTarget } from "../domain/Runner.js"
import { isTerminal, type WorkflowHead } from "../domain/Workflow.js"
import { WorkflowTransition as T } from "../domain/WorkflowStatus.js"
import { type ProvisionProgress, RunnerAgents } from "../ports/RunnerAgents.js"
import { WorkflowEventBus } from "../ports/WorkflowEvents.js"
import { WorkflowRepository } from "../ports/WorkflowRepository.js"

/** Progress events of one workflow's provisioning per second, at most (besides each file's last). */
export const PROVISIONING_EVENTS_PER_SECOND = 2

/** The exception type of a workflow whose model files could not be placed. */
export const MODEL_PROVISIONING_FAILED = "ModelProvisioningFailed"

const failed = (exception_message: string) => T.Failed({ error_node: null, exception_type: MODEL_PROVISIONING_FAILED, exception_message })

/**
 * What came of it: the files are in place (or there were none to place), the workflow fails, or
 * it ended meanwhile (its owner cancelled it while its files were downloading: nothing to post).
 */
export type Provisioned =
  | { readonly _tag: "Ready" }
  | { readonly _tag: "Failed"; readonly end: T }
  | { readonly _tag: "Gone" }

const ready: Provisioned = { _tag: "Ready" }

/** The data of a `provisioning` event. */
export const provisioningData = (p: ProvisionProgress) => ({
  folder: p.folder,
  filename: p.filename,
  bytes: p.bytes,
  total: p.total,
  percent: p.total === null || p.total <= 0 ? null : Math.min(100, Math.floor((100 * p.bytes) / p.total))
})

/** Places `w`'s model files on `runner` when it is an agent runner; a direct runner is left alone. */
export const provision = (runner: RunnerTarget, w: Pick<WorkflowHead, "id" | "models">) =>
  Effect.gen(function*() {
    if (runner.connection !== "agent" || w.models.length === 0) return ready
    const agents = yield* Effect.serviceOption(RunnerAgents)
    if (Option.isNone(agents)) {
      return {
        _tag: "Failed",
        end: failed(`The runner is reached through wes-agent, but this WES instance cannot talk to agents: its model files were not placed`)
      } satisfies Provisioned
    }
    const bus = yield* WorkflowEventBus
    const publish = (p: ProvisionProgress) =>
      bus.publish(w.id, [{ type: "provisioning", data: provisioningData(p) }]).pipe(
        Effect.catch((e) => Effect.logWarning("could not publish provisioning progress", { workflow_id: w.id, error: e.message }))
      )
    const windowMs = 1000 / PROVISIONING_EVENTS_PER_SECOND
    /** When the last event went out, and the progress held back since (published at the end). */
    let lastAt = -Infinity
    let held: ProvisionProgress | undefined
    const onProgress = (p: ProvisionProgress) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const fileDone = p.total !== null && p.bytes >= p.total
        if (!fileDone && now - lastAt < windowMs) {
          held = p
          return Effect.void
        }
        lastAt = now
        held = undefined
        return publish(p)
      })
    const flush = Effect.suspend(() => {
      const last = held
      held = undefined
      return last === undefined ? Effect.void : publish(last)
    })
    const repo = yield* WorkflowRepository
    // A download may take minutes: a workflow cancelled meanwhile is not posted.
    const stillWanted = Effect.map(Effect.suspend(() => repo.findById(w.id)), (latest): Provisioned =>
      Option.isNone(latest) || isTerminal(latest.value.status) ? { _tag: "Gone" } : ready)
    return yield* agents.value.provision(runner.id, w.models, onProgress).pipe(
      Effect.ensuring(flush),
      Effect.andThen(stillWanted),
      Effect.catchTag("ProvisionFailed", (e) =>
        Effect.succeed<Provisioned>({ _tag: "Failed", end: failed(provisionFailure(w.models, e.filename, e.message)) }))
    )
  })

/** `Model file loras/x.safetensors could not be placed on the runner: <why>`. */
const provisionFailure = (models: ReadonlyArray<ModelFile>, filename: string, why: string): string => {
  const declared = models.find((m) => m.filename === filename)
  const place = declared === undefined ? filename : `${declared.folder}/${declared.filename}`
  return `Model file ${place} could not be placed on the runner: ${why}`
}
