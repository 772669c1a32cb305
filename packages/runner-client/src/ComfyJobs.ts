/**
 * ComfyUI's jobs API (newer servers; server.py `/api/jobs*`, comfy_execution/jobs.py): whether a
 * runner has it (the probe asks once, and the answer is stored with the runner), and a prompt's
 * status and cancel through it. Its cancel is atomic: it interrupts the prompt only if it is still
 * the one running, and dequeues it otherwise. Its routes exist only under `/api` (they are
 * declared as `/api/jobs...`, and ComfyUI adds an `/api` alias of every route: an endpoint that
 * already ends in `/api` reaches them too). A runner that answers them as a missing route (404
 * without the job's error, 405) was downgraded since it was probed: the caller falls back.
 */
import type { PromptStatus, RunnerError, RunnerTarget, RunnerUnreachable } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { Dispatcher } from "undici"
import { JobAnswer, JobCancelled, JobNotFound, jobStatus, JobsPage } from "./ComfyResponses.js"
import { type Answer, type Limits, send, statusFailure, unexpectedBody } from "./RunnerHttp.js"

export interface ComfyJobs {
  /** `GET /api/jobs?status=in_progress&limit=1` answers a page of jobs (no history is read for it). */
  readonly detect: (runner: RunnerTarget) => Effect.Effect<boolean>
  /** `GET /api/jobs/{id}`; none when the runner lacks the route. */
  readonly status: (runner: RunnerTarget, promptId: string) => Effect.Effect<Option.Option<PromptStatus>, RunnerError>
  /** `POST /api/jobs/{id}/cancel`; none when the runner lacks the route. */
  readonly cancel: (runner: RunnerTarget, promptId: string) => Effect.Effect<Option.Option<void>, RunnerError>
}

const parse = <A>(schema: Schema.Decoder<A>) => {
  const decode = Schema.decodeUnknownResult(Schema.fromJsonString(schema))
  return (answer: Answer): Result.Result<A, unknown> => decode(answer.text)
}
const jobAnswer = parse(JobAnswer)
const jobNotFound = parse(JobNotFound)
const jobCancelled = parse(JobCancelled)
const jobsPage = parse(JobsPage)

/** A route the runner does not have: the static files' 404 (no JSON error) or their 405 for a POST. */
const missingRoute = (answer: Answer): boolean => answer.status === 405 || (answer.status === 404 && Result.isFailure(jobNotFound(answer)))

/** The jobs API on `dispatcher`, each call with the client's ordinary `limits`. */
export const makeComfyJobs = (dispatcher: Dispatcher, limits: Limits): ComfyJobs => {
  const decoded = <A>(runner: RunnerTarget, answer: Answer, decode: (a: Answer) => Result.Result<A, unknown>): Effect.Effect<A, RunnerUnreachable> =>
    Result.match(decode(answer), {
      onFailure: () => Effect.fail(unexpectedBody(runner, answer.what, answer.status, answer.text)),
      onSuccess: Effect.succeed
    })

  const path = (promptId: string) => `/api/jobs/${encodeURIComponent(promptId)}`

  return {
    detect: (runner) =>
      send(dispatcher, runner, { method: "GET", path: "/api/jobs", query: { status: "in_progress", limit: "1" }, acceptJson: true }, limits).pipe(
        Effect.map((answer) => answer.status === 200 && Result.isSuccess(jobsPage(answer))),
        // Unknown is no jobs API: the three-request path works on every version.
        Effect.catch((e) => Effect.as(Effect.logDebug("could not ask the runner for its jobs API", { runner_id: runner.id, error: e.message }), false))
      ),
    status: (runner, promptId) =>
      Effect.flatMap(send(dispatcher, runner, { method: "GET", path: path(promptId), acceptJson: true }, limits), (answer) => {
        if (answer.status === 200) return Effect.map(decoded(runner, answer, jobAnswer), (job) => Option.some(jobStatus(job)))
        if (answer.status === 404 && Result.isSuccess(jobNotFound(answer))) return Effect.succeed(Option.some({ _tag: "Unknown" as const }))
        return missingRoute(answer) ? Effect.succeedNone : Effect.fail(statusFailure(runner, answer))
      }),
    cancel: (runner, promptId) =>
      Effect.flatMap(send(dispatcher, runner, { method: "POST", path: `${path(promptId)}/cancel`, acceptJson: true }, limits), (answer) => {
        if (answer.status === 200) return Effect.as(decoded(runner, answer, jobCancelled), Option.some(undefined))
        return missingRoute(answer) ? Effect.succeedNone : Effect.fail(statusFailure(runner, answer))
      })
  }
}
