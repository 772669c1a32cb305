/**
 * Disk hygiene on agent runners (issue 34): once a run's end is recorded (a completion only after
 * its outputs are stored in WES; a failure or an interruption too), the runner's agent is asked to
 * delete the run's files from ComfyUI's folders: the outputs its history lists (output and temp)
 * and the inputs WES uploaded for it. Forked beside the driver: it never delays or fails the
 * workflow's end, and a failure is logged as a warning (the agent's own sweep, or the next run's
 * cleanup, is not relied on: a file left behind is wasted disk, not a wrong result). A directly
 * reachable runner is left alone: WES cannot delete files there.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { WorkflowHead } from "../domain/Workflow.js"
import { sanitizeFilename } from "../ports/BlobStore.js"
import { RunnerAgents } from "../ports/RunnerAgents.js"
import { type OutputFile, UPLOAD_SUBFOLDER, type UploadedInput } from "../ports/RunnerGateway.js"
import { Driving } from "./Driving.js"

/** The name a workflow's input stored at `blobKey` is uploaded to the runner under (unique per workflow). */
export const uploadName = (workflowId: string, blobKey: string): string =>
  `${workflowId}_${sanitizeFilename(blobKey.split("/").pop() ?? "file")}`

/** The inputs Submit uploaded for `w` (its `$file` parameters), as the runner stores them. */
export const uploadedInputsOf = (w: Pick<WorkflowHead, "id" | "workflow_params">): ReadonlyArray<UploadedInput> =>
  w.workflow_params
    .filter(([placeholder]) => placeholder.startsWith("$file("))
    .map(([, key]) => ({ name: uploadName(w.id, key), subfolder: UPLOAD_SUBFOLDER, type: "input" }))

/**
 * Asks the agent of this driver's runner to delete the files of `w`'s run, beside the driver.
 * Nothing for a direct runner, or without the agent service.
 */
export const cleanupRun = (w: Pick<WorkflowHead, "id" | "workflow_params">, outputs: ReadonlyArray<OutputFile>) =>
  Effect.gen(function*() {
    const agents = yield* Effect.serviceOption(RunnerAgents)
    if (Option.isNone(agents)) return
    const driving = yield* Driving
    yield* driving.fork(
      "could not delete a run's files on its runner",
      Effect.gen(function*() {
        const target = yield* driving.target
        if (Option.isNone(target) || target.value.connection !== "agent") return
        yield* agents.value.cleanup(target.value.id, { prompt_id: w.id, outputs, inputs: uploadedInputsOf(w) })
      })
    )
  })
