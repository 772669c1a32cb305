/**
 * Safe automatic retry (issue 17): a run that failed because its runner lost it (`RunnerLost`,
 * found by reconciliation: neither in the runner's queue nor in its history) or ran out of memory
 * (`torch.OutOfMemoryError` and its CUDA variants) goes back to `accepted` on another eligible
 * runner, as many times as the user's tier allows (`retries`), keeping its id; the failed run is
 * appended to its `attempts`. Runners of earlier attempts are not chosen again. Without a retry
 * left or another runner, the failure stands.
 *
 * Never a second post of one attempt: the retry is one guarded transition that also drops the
 * claim and clears `submitted_at`/`prompt_id`, and the new runner's driver claims it like any new
 * work. A run is declared lost after reconciliation found it nowhere on a runner that answers, or
 * once its runner has not answered for `runnerLostAfter` (LostRunner.ts): should that runner come
 * back still holding the prompt, reconciliation removes it there.
 */
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { AccountRepository } from "../ports/AccountRepository.js"
import { TierPolicy } from "../domain/Tier.js"
import type { RunnerId } from "../domain/Ids.js"
import { refOf, type WorkflowAttempt, type WorkflowHead } from "../domain/Workflow.js"
import { type FailureDetails, WorkflowTransition as T } from "../domain/WorkflowStatus.js"
import { needsOf } from "../domain/Needs.js"
import { WorkflowRepository } from "../ports/WorkflowRepository.js"
import { Driving } from "./Driving.js"
import { Scheduler } from "../usecases/Scheduler.js"

const OUT_OF_MEMORY = /^(torch\.(cuda\.)?)?OutOfMemoryError$/

/** True for failures worth a run on another runner: the runner lost the prompt, or ran out of memory. */
export const isRetryable = (exceptionType: string): boolean =>
  exceptionType === "RunnerLost" || OUT_OF_MEMORY.test(exceptionType)

/**
 * The move that ends `w`'s run on this driver's runner with `failure`: `Retried` onto another
 * eligible runner when the failure is retryable, the tier has a retry left and such a runner
 * exists; otherwise `Failed`. Lookups that fail leave the failure standing (never a lost workflow).
 */
export const failOrRetry = (
  w: Pick<WorkflowHead, "id" | "user_id" | "tags" | "attempts" | "started_at" | "models">,
  failure: FailureDetails,
  startedAt: WorkflowAttempt["started_at"] = w.started_at
) =>
  Effect.gen(function*() {
    const failed = T.Failed(failure)
    if (!isRetryable(failure.exception_type)) return failed
    const driving = yield* Driving
    const user = yield* Effect.flatMap(AccountRepository, (a) => a.findUser(w.user_id))
    if (Option.isNone(user)) return failed
    const policy = yield* TierPolicy
    if (w.attempts.length >= policy.limitsFor(user.value.tier).retries) return failed
    // The definition (read only for a retry) says what the next runner must have.
    const stored = yield* Effect.flatMap(WorkflowRepository, (repo) => repo.findById(w.id))
    if (Option.isNone(stored)) return failed
    const exclude = [driving.ref.id, ...w.attempts.map((a) => a.runner_id as RunnerId)]
    const needs = needsOf(stored.value.workflow_json, stored.value.workflow_params)
    const next = yield* Effect.flatMap(Scheduler, (s) => s.choose(user.value, w.tags, { exclude, needs, models: w.models }))
    const attempt: WorkflowAttempt = {
      runner_id: driving.ref.id,
      runner_kind: driving.ref.kind,
      started_at: startedAt,
      ended_at: yield* DateTime.now,
      ...failure
    }
    return T.Retried({ runner: refOf(next), attempts: [...w.attempts, attempt] })
  }).pipe(Effect.catch((e) =>
    e._tag === "NoEligibleRunner"
      ? Effect.succeed(T.Failed(failure))
      : Effect.as(Effect.logWarning("could not look for a runner to retry on; the failure stands", { error: e.message }), T.Failed(failure))
  ))
