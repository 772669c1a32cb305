/**
 * Submitting one claimed workflow to this driver's runner: ask the runner first if an earlier
 * claim may have posted it, convert its parameters to the types of the inputs they fill on this
 * runner (TypedParams.ts; one that does not convert ends it `invalid`), upload its `$file` inputs,
 * post the prompt (the workflow id as its `prompt_id`), and record `queued` (with `uploaded` in
 * the same write when there were no files). On a runner reached through `wes-agent`, the
 * workflow's model files are placed before anything is uploaded (Provisioning.ts).
 * A runner that does not answer is retried on the `retrySchedule`; then the workflow moves to
 * another runner, or fails with `RunnerUnavailable` (MoveAway.ts).
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import { RunnerCapabilities } from "../usecases/RunnerCapabilities.js"
import { describeMismatch, type InputTypeIndex, type ParamMismatch, typedPrompt } from "../domain/TypedParams.js"
import { supportedComfyUI, unsupportedVersionMessage } from "../domain/ComfyUIVersion.js"
import type { RunnerTarget } from "../domain/Runner.js"
import { inputReference, type RunnerError, RunnerGateway } from "../ports/RunnerGateway.js"
import { BlobStore } from "../ports/BlobStore.js"
import { retryAfterFailure } from "../domain/RetryAfterFailure.js"
import { findPlaceholders, substitute } from "../domain/Placeholders.js"
import { isTerminal, type Workflow } from "../domain/Workflow.js"
import { WorkflowRepository } from "../ports/WorkflowRepository.js"
import { WorkflowTransition as T } from "../domain/WorkflowStatus.js"
import { advance, endedAs } from "./Advance.js"
import { takesWork } from "../domain/Scheduling.js"
import type { ClaimedWorkflow } from "../ports/Dispatch.js"
import { retrySchedule } from "./DispatcherOptions.js"
import { awaitSocket, Driving } from "./Driving.js"
import { recordEnd } from "./Finish.js"
import { transition } from "../usecases/Lifecycle.js"
import { moveAway } from "./MoveAway.js"
import { answer } from "./PostAnswer.js"
import { observe, stepsTo } from "./QueuePositions.js"
import { provision } from "./Provisioning.js"
import { uploadName } from "./Cleanup.js"

/** A failed input: the stored upload is gone (the workflow cannot run anywhere). */
const inputMissing = (placeholder: string) =>
  T.Failed({ error_node: null, exception_type: "InputMissing", exception_message: `The uploaded file for ${placeholder} is no longer stored` })

/** A value this runner's input does not take: the workflow is invalid, as ComfyUI would have said. */
const notConverted = (m: ParamMismatch) =>
  T.Rejected({ error_node: m.node, exception_type: "InvalidParameter", exception_message: describeMismatch(m) })

/** The runner's widget types as this instance knows them (none without the capability service). */
const typesOf = (runner: RunnerTarget) =>
  Effect.flatMap(Effect.serviceOption(RunnerCapabilities), Option.match({
    onNone: () => Effect.succeed<InputTypeIndex | undefined>(undefined),
    onSome: (c) => Effect.map(c.lookupAll([runner.id]), ([known]) => Option.getOrUndefined(known!)?.index.types)
  }))

/**
 * One attempt: where the prompt already is (`OnRunner`, `Finished`), or the uploads and the post
 * (`Posted`); `Disabled`, `Gone` (ended meanwhile), `LeaseLost` and `Failed` (an input is gone)
 * need no post. Runner errors fail the attempt, to be retried.
 */
const attempt = (w: Workflow, resubmit: boolean) =>
  Effect.gen(function*() {
    const driving = yield* Driving
    const gateway = yield* RunnerGateway
    const blobs = yield* BlobStore
    const cached = yield* driving.target
    // A copy that says "no work" may be up to `runnerRefreshInterval` old (a runner enabled or
    // upgraded since): read it again before moving the workflow away.
    const target = Option.isSome(cached) && takesWork(cached.value) ? cached : yield* driving.refreshTarget
    if (Option.isNone(target) || target.value.status !== "active") return { _tag: "Disabled" as const, reason: "the runner is disabled" }
    // Found below the supported ComfyUI since it was registered (a downgrade): another runner's work.
    const comfyui = target.value.comfyui
    if (!supportedComfyUI(comfyui)) return { _tag: "Disabled" as const, reason: unsupportedVersionMessage(comfyui?.version ?? "") }
    const runner = target.value
    if (resubmit) {
      // An earlier claim may have posted it before a restart or a timeout: ask first.
      const status = yield* gateway.status(runner, w.id)
      switch (status._tag) {
        case "Running":
          return { _tag: "OnRunner" as const, queueNumber: 0 }
        case "Pending":
          return { _tag: "OnRunner" as const, queueNumber: status.position ?? (yield* estimatedPosition) }
        case "Finished":
          return { _tag: "Finished" as const, history: status.history }
      }
    }
    // An agent runner places the workflow's model files first (Provisioning.ts).
    const provisioned = yield* provision(runner, w)
    if (provisioned._tag === "Failed") return { _tag: "Failed" as const, end: provisioned.end }
    if (provisioned._tag === "Gone") return { _tag: "Gone" as const }
    // Only text and choice values are converted: without them, no lookup of the runner's types.
    const values = w.workflow_params.filter(([p]) => !p.startsWith("$file("))
    const typed = values.length === 0 ? Result.succeed(w.workflow_json) : typedPrompt(w.workflow_json, values, yield* typesOf(runner))
    if (Result.isFailure(typed)) return { _tag: "Failed" as const, end: notConverted(typed.failure) }
    const files = new Map<string, string>()
    for (const [placeholder, key] of w.workflow_params) {
      if (!placeholder.startsWith("$file(")) continue
      const blob = yield* blobs.get(key)
      if (Option.isNone(blob)) return { _tag: "Failed" as const, end: inputMissing(placeholder) }
      const uploaded = yield* gateway.uploadInput(runner, {
        filename: uploadName(w.id, key),
        content_type: blob.value.content_type,
        content: blob.value.stream
      })
      files.set(placeholder, inputReference(uploaded))
    }
    const hadFiles = w.workflow_params.some(([p]) => p.startsWith("$file("))
    if (hadFiles) {
      const up = yield* advance(w.id, (h) => h.status === "accepted" ? [T.Uploaded()] : undefined)
      if (Option.isSome(up) && up.value._tag !== "Applied") return { _tag: "Gone" as const }
    }
    yield* awaitSocket
    // Fencing: after a pause past the lease, another instance may drive this runner now. Asked
    // here, and again by the client as the request is written: it may wait for a connection, or
    // the process may be frozen, for longer than the lease has left.
    if (!driving.lease.held()) return { _tag: "LeaseLost" as const }
    const placeholders = files.size === 0 ? [] : Result.getOrElse(findPlaceholders(w.workflow_json), () => [])
    return yield* gateway.submit(runner, {
      prompt_id: w.id,
      prompt: files.size === 0 ? typed.success : substitute(typed.success, placeholders, files),
      client_id: driving.lease.clientId,
      extra_data: { wes_workflow_id: w.id },
      fence: driving.lease.held
    }).pipe(
      Effect.as({ _tag: "Posted" as const }),
      Effect.catchTag("PromptWithheld", () =>
        Effect.as(
          Effect.logWarning("WES: withheld a prompt: the lease on its runner ended before it was sent", { runner_id: runner.id, workflow_id: w.id }),
          { _tag: "LeaseLost" as const }
        ))
    )
  })

const retryable = (e: { readonly _tag: string }): e is RunnerError => e._tag === "RunnerUnreachable" || e._tag === "RunnerRequestFailed"

/** The position a new prompt takes: behind what this driver knows to be waiting on the runner. */
const estimatedPosition = Effect.flatMap(Driving, (d) =>
  Effect.map(d.inFlight.all, (all) => 1 + all.filter((t) => t.phase !== "submitting" && t.workflow.status === "queued").length))

/** Submits `claimed`; the driver calls it with the workflow tracked in phase `submitting`. */
export const submit = (claimed: ClaimedWorkflow) =>
  Effect.flatMap(Driving, ({ inFlight }) =>
    Effect.flatMap(inFlight.get(claimed.workflow.id), (t) => {
      // An end seen on the WebSocket may wait for the runner's answer: there is none if this ends without one.
      const answered = Option.isSome(t) ? t.value.answered : undefined
      return answered === undefined ? submitting(claimed) : Effect.ensuring(submitting(claimed), Deferred.succeed(answered, "none"))
    }))

const submitting = (claimed: ClaimedWorkflow) =>
  Effect.gen(function*() {
    const driving = yield* Driving
    const gateway = yield* RunnerGateway
    const repo = yield* WorkflowRepository
    let w = claimed.workflow
    let first = true
    const once = Effect.suspend(() => {
      if (first) {
        first = false
        return attempt(w, claimed.resubmit)
      }
      // A retry: the workflow may have been cancelled meanwhile, and a post may have arrived.
      return Effect.flatMap(repo.findById(w.id), Option.match({
        onNone: () => Effect.succeed({ _tag: "Gone" as const }),
        onSome: (latest) => {
          w = latest
          return isTerminal(latest.status) ? Effect.succeed({ _tag: "Gone" as const }) : attempt(latest, true)
        }
      }))
    })
    // A failed attempt wrote nothing: whoever waits for this submission to record a start need not
    // wait longer. Not a rejection: the start waits until the rejection is written, so that nothing
    // the runner did first (it may have started the prompt before answering) is recorded.
    const attemptFailed = Effect.flatMap(driving.inFlight.get(w.id), (t) =>
      Option.isSome(t) && t.value.recorded !== undefined ? Effect.asVoid(Deferred.succeed(t.value.recorded, undefined)) : Effect.void)
    const tried = once.pipe(
      Effect.tapError((e) =>
        e._tag === "PromptRejected"
          ? Effect.void
          : e._tag === "StorageError"
          ? attemptFailed
          : Effect.andThen(
            attemptFailed,
            Effect.logWarning("runner call failed", { runner_id: driving.ref.id, workflow_id: w.id, error: e.message })
          )
      )
    )
    const result = yield* Effect.result(retryAfterFailure(tried, retrySchedule(driving.options), retryable))
    if (Result.isFailure(result)) {
      const e = result.failure
      if (e._tag === "StorageError") return yield* Effect.fail(e)
      if (e._tag === "PromptRejected") {
        // Invalid, whatever the runner did first: an end seen meanwhile is dropped (PostAnswer.ts).
        yield* answer(w.id, "rejected")
        const outcome = yield* transition(w.id, [T.Rejected({ error_node: e.error_node, exception_type: e.error_type, exception_message: e.message })])
        // Only its owner's cancel may come first; anything else would be a bug worth seeing.
        if (outcome._tag === "Refused" && !isTerminal(outcome.status)) {
          yield* Effect.logWarning("a prompt the runner rejected could not be recorded invalid", { workflow_id: w.id, status: outcome.status })
        }
        return yield* driving.inFlight.remove(w.id)
      }
      return yield* moveAway(w, `runner is unreachable (${(e as RunnerError).message})`)
    }
    const r = result.success
    switch (r._tag) {
      case "Disabled":
        return yield* moveAway(w, r.reason)
      case "Gone":
      case "LeaseLost":
        return yield* driving.inFlight.remove(w.id)
      case "Failed":
        yield* transition(w.id, [r.end])
        return yield* driving.inFlight.remove(w.id)
      case "Finished":
        yield* driving.inFlight.shift(w.id, ["submitting"], "finishing")
        return yield* recordEnd(w.id, r.history)
      case "OnRunner":
        yield* driving.inFlight.shift(w.id, ["submitting"], "onRunner")
        return yield* observe(w.id, r.queueNumber)
      case "Posted": {
        // Its end came first: the end's path records every step in one write.
        if (yield* answer(w.id, "posted")) return yield* Effect.asVoid(driving.inFlight.shift(w.id, ["submitting"], "onRunner"))
        // The runner may have started it already (its WebSocket said so while this was posting).
        const startedAt = Option.flatMap(yield* driving.inFlight.get(w.id), (t) => Option.fromNullishOr(t.startedAt))
        const position = Option.isSome(startedAt) ? 0 : yield* estimatedPosition
        const advanced = yield* advance(w.id, (h) => stepsTo(h, position, Option.getOrUndefined(startedAt)))
        if (endedAs(advanced, "cancelled")) {
          // Cancelled while it was being posted: take it off the runner again.
          yield* driving.target.pipe(
            Effect.flatMap(Option.match({ onNone: () => Effect.void, onSome: (t) => Effect.ignore(gateway.cancel(t, w.id)) }))
          )
        }
        yield* driving.inFlight.shift(w.id, ["submitting"], "onRunner")
      }
    }
  })
