import { applyTransition } from "../src/domain/WorkflowStatus.js"
import { type Workflow, WorkflowStatus, WorkflowTransition } from "@wes/core"
import { type TransitionTag, transitions } from "../src/domain/WorkflowStatus.js"
import { Fixtures } from "@wes/core/testing"
import * as DateTime from "effect/DateTime"
import * as Result from "effect/Result"
import { describe, expect, it } from "vitest"

const now = DateTime.makeUnsafe("2026-11-21T10:00:00Z")
const inState = (status: WorkflowStatus, over: Partial<Workflow> = {}) => Fixtures.workflow(Fixtures.uuid(), { status, ...over })
const apply = (w: Workflow, e: WorkflowTransition) => applyTransition(w, e, now)
const failure = { error_node: "3", exception_type: "torch.OutOfMemoryError", exception_message: "CUDA out of memory" }

const sample: { readonly [T in TransitionTag]: WorkflowTransition } = {
  Uploaded: WorkflowTransition.Uploaded(),
  Queued: WorkflowTransition.Queued({ prompt_id: "p", queue_number: 2 }),
  QueueMoved: WorkflowTransition.QueueMoved({ queue_number: 1 }),
  Started: WorkflowTransition.Started({}),
  Completed: WorkflowTransition.Completed({}),
  Failed: WorkflowTransition.Failed(failure),
  Rejected: WorkflowTransition.Rejected({ ...failure, exception_type: "prompt_outputs_failed_validation" }),
  Cancelled: WorkflowTransition.Cancelled(),
  Reassigned: WorkflowTransition.Reassigned({ runner: { kind: "managed", id: Fixtures.uuid() as never } }),
  Retried: WorkflowTransition.Retried({
    runner: { kind: "user", id: Fixtures.uuid() as never },
    attempts: [{
      runner_id: Fixtures.uuid(),
      runner_kind: "user",
      started_at: null,
      ended_at: now,
      error_node: "3",
      exception_type: "torch.OutOfMemoryError",
      exception_message: "CUDA out of memory"
    }]
  })
}

describe("workflow state machine", () => {
  it("walks the happy path, setting the fields of each step", () => {
    let w = inState("accepted")
    w = Result.getOrThrow(apply(w, sample.Uploaded))
    expect(w.status).toBe("uploaded")
    w = Result.getOrThrow(apply(w, sample.Queued))
    expect([w.status, w.prompt_id, w.queue_number]).toEqual(["queued", "p", 2])
    w = Result.getOrThrow(apply(w, sample.QueueMoved))
    expect([w.status, w.queue_number]).toEqual(["queued", 1])
    const startedAt = DateTime.makeUnsafe("2026-11-21T09:59:00Z")
    w = Result.getOrThrow(apply(w, WorkflowTransition.Started({ at: startedAt })))
    expect([w.status, w.started_at, w.queue_number, w.completed_at]).toEqual(["running", startedAt, 0, null])
    w = Result.getOrThrow(apply(w, sample.Completed))
    expect([w.status, w.completed_at, w.updated_at]).toEqual(["completed", now, now])
    expect([w.error_node, w.exception_type, w.exception_message]).toEqual([null, null, null])
  })

  it("records failure details and completed_at on failed", () => {
    const w = Result.getOrThrow(apply(inState("running"), sample.Failed))
    expect(w).toMatchObject({ status: "failed", completed_at: now, ...failure })
  })

  it("keeps the runner's reason on invalid", () => {
    const w = Result.getOrThrow(apply(inState("uploaded"), sample.Rejected))
    expect(w).toMatchObject({ status: "invalid", completed_at: now, exception_type: "prompt_outputs_failed_validation" })
  })

  it("cancels from every unfinished state and sets completed_at", () => {
    for (const s of ["accepted", "uploaded", "queued", "running"] as const) {
      const w = Result.getOrThrow(apply(inState(s), sample.Cancelled))
      expect([w.status, w.completed_at]).toEqual(["cancelled", now])
    }
  })

  it("moves a workflow to another runner only before it is queued", () => {
    const w = Result.getOrThrow(apply(inState("uploaded", { submitted_at: now }), sample.Reassigned))
    expect(w.user_runner_id).toBeNull()
    expect(w.managed_runner_id).not.toBeNull()
    expect([w.dispatch_attempts, w.submitted_at]).toEqual([1, null])
    expect(Result.isFailure(apply(inState("queued"), sample.Reassigned))).toBe(true)
  })

  it("allows exactly the moves of the table and rejects every other with a typed error", () => {
    for (const status of WorkflowStatus.literals) {
      for (const tag of Object.keys(sample) as Array<TransitionTag>) {
        const r = apply(inState(status), sample[tag])
        const allowed = transitions[tag].from.includes(status)
        expect([status, tag, Result.isSuccess(r)]).toEqual([status, tag, allowed])
        if (Result.isFailure(r)) {
          expect(r.failure).toMatchObject({ _tag: "IllegalTransition", from: status, event: tag })
        }
      }
    }
  })

  it("keeps terminal states final, even when the runner later reports success", () => {
    for (const status of ["completed", "cancelled", "invalid", "failed"] as const) {
      for (const tag of Object.keys(sample) as Array<TransitionTag>) {
        expect(Result.isFailure(apply(inState(status), sample[tag]))).toBe(true)
      }
    }
  })
})
