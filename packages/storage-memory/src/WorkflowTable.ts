/**
 * The workflows of the memory store and the indexes its operations read: by owner (newest
 * first), unfinished ones per runner (oldest first), counts of unfinished work per user and per
 * runner, the waiting ones per runner, user and priority (oldest first, what a claim reads),
 * idempotency keys, outputs and dispatch claims. Every change goes through `insert` or
 * `replace`, which keep the indexes in step.
 */
import { isTerminal, runnerOf, type Workflow, type WorkflowOutput } from "@wes/core"
import { IndexByOwner } from "./NewestFirst.js"
import { OldestFirst } from "./OldestFirst.js"

const bump = (counts: Map<string, number>, key: string, by: number) => {
  const n = (counts.get(key) ?? 0) + by
  if (n === 0) counts.delete(key)
  else counts.set(key, n)
}

/** Waiting for submission: what a claim takes. */
export const isWaiting = (w: Workflow): boolean => w.status === "accepted" || w.status === "uploaded"

/** A claim on a waiting workflow: who holds it, until when (epoch ms). */
export interface Claim {
  readonly owner: string
  readonly until: number
}

export class WorkflowTable {
  readonly byId = new Map<string, Workflow>()
  readonly byUser = new IndexByOwner()
  readonly activeByUser = new Map<string, number>()
  readonly inFlightByRunner = new Map<string, number>()
  /** Unfinished workflow ids per runner, in insertion (creation) order. */
  readonly unfinishedByRunner = new Map<string, Set<string>>()
  /** Waiting workflows per runner, then per user and priority (`user\0priority`), oldest first. */
  readonly waitingByRunner = new Map<string, Map<string, OldestFirst>>()
  /** Unfinished workflows per runner that do not wait (queued, running), counted per user. */
  readonly busyByRunner = new Map<string, Map<string, number>>()
  readonly outputs = new Map<string, Array<WorkflowOutput>>()
  readonly claims = new Map<string, Claim>()
  /** Finished workflows whose files retention has not swept yet, in the order they ended. */
  readonly unswept = new Set<string>()
  /** Finished workflows whose events are not pruned yet, in the order they ended. */
  readonly eventsKept = new Set<string>()
  private readonly idempotency = new Map<string, string>()

  insert(w: Workflow): void {
    this.byId.set(w.id, w)
    this.byUser.of(w.user_id).add(w.id, w.created_at)
    if (w.idempotency_key !== null) this.idempotency.set(this.keyOf(w.user_id, w.idempotency_key), w.id)
    this.account(w, 1)
    if (isTerminal(w.status)) this.finished(w.id)
  }

  replace(before: Workflow, after: Workflow): void {
    if (this.inPlace(before, after)) return
    this.account(before, -1)
    this.byId.set(after.id, after)
    this.account(after, 1)
    if (isTerminal(after.status)) {
      this.claims.delete(after.id)
      if (!isTerminal(before.status)) this.finished(after.id)
    }
  }

  private finished(id: string): void {
    this.unswept.add(id)
    this.eventsKept.add(id)
  }

  /**
   * A change that moves it in no index (a claim marking `submitted_at`): the record is swapped
   * where it stands, instead of out of and back into its runner's waiting list.
   */
  private inPlace(before: Workflow, after: Workflow): boolean {
    if (
      before.status !== after.status || before.user_id !== after.user_id || before.priority !== after.priority ||
      before.created_at !== after.created_at || before.user_runner_id !== after.user_runner_id ||
      before.managed_runner_id !== after.managed_runner_id || !isWaiting(before)
    ) return false
    const runner = runnerOf(before)?.id
    const list = runner === undefined ? undefined : this.waitingByRunner.get(runner)?.get(`${before.user_id}\u0000${before.priority}`)
    if (list === undefined || !list.replace(before, after)) return false
    this.byId.set(after.id, after)
    return true
  }

  byIdempotencyKey(userId: string, key: string): Workflow | undefined {
    return this.byId.get(this.idempotency.get(this.keyOf(userId, key)) ?? "")
  }

  /** The user's workflows, newest first. */
  newest(userId: string): Array<Workflow> {
    const index = this.byUser.peek(userId)
    return index === undefined ? [] : Array.from(index.newest(), (id) => this.byId.get(id)!)
  }

  addOutputs(outputs: ReadonlyArray<WorkflowOutput>): void {
    for (const o of outputs) {
      const list = this.outputs.get(o.workflow_id)
      if (list === undefined) this.outputs.set(o.workflow_id, [o])
      else list.push(o)
    }
  }

  private keyOf(userId: string, key: string): string {
    return `${userId}\u0000${key}`
  }

  /** Counts a workflow in (1) or out of (-1) the indexes of unfinished work. */
  private account(w: Workflow, sign: 1 | -1): void {
    if (isTerminal(w.status)) return
    bump(this.activeByUser, w.user_id, sign)
    const runner = runnerOf(w)?.id
    if (runner === undefined) return
    bump(this.inFlightByRunner, runner, sign)
    if (isWaiting(w)) this.indexWaiting(runner, w, sign)
    else {
      let busy = this.busyByRunner.get(runner)
      if (busy === undefined) this.busyByRunner.set(runner, (busy = new Map()))
      bump(busy, w.user_id, sign)
      if (busy.size === 0) this.busyByRunner.delete(runner)
    }
    let set = this.unfinishedByRunner.get(runner)
    if (sign === 1) {
      if (set === undefined) this.unfinishedByRunner.set(runner, (set = new Set()))
      set.add(w.id)
    } else if (set !== undefined) {
      set.delete(w.id)
      if (set.size === 0) this.unfinishedByRunner.delete(runner)
    }
  }

  private indexWaiting(runner: string, w: Workflow, sign: 1 | -1): void {
    let queues = this.waitingByRunner.get(runner)
    if (queues === undefined) this.waitingByRunner.set(runner, (queues = new Map()))
    const key = `${w.user_id}\u0000${w.priority}`
    let list = queues.get(key)
    if (list === undefined) queues.set(key, (list = new OldestFirst()))
    if (sign === 1) list.insert(w)
    else if (list.remove(w)) {
      if (list.length === 0) queues.delete(key)
      if (queues.size === 0) this.waitingByRunner.delete(runner)
    }
  }
}
