/**
 * Driving one runner (design.md sections 5 and 6): submitting the workflows assigned to it,
 * following them over its WebSocket, and reconciling against `/queue` and `/history` so that none
 * stays stuck after a gap. One instance drives a runner at a time (RunnerOwnership).
 */
import * as Clock from "effect/Clock"
import * as DateTime from "effect/DateTime"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Random from "effect/Random"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { AccountRepository } from "./AccountRepository.js"
import { BlobStore, outputBlobKey, sanitizeFilename } from "./BlobStore.js"
import { DispatchQueue, type RunnerLease } from "./Dispatch.js"
import { StorageError } from "./Errors.js"
import { IdGenerator, type ManagedRunnerId, type OutputId, type RunnerId } from "./Ids.js"
import { transition } from "./Lifecycle.js"
import { findPlaceholders, substitute } from "./Placeholders.js"
import { advanceProgress, progressPercent, type PromptProgress, startProgress } from "./Progress.js"
import type { RunnerTarget } from "./Runner.js"
import {
  inputReference,
  type PromptHistory,
  type QueueSnapshot,
  RunnerGateway,
  type RunnerError,
  type RunnerEvent,
  RunnerUnreachable
} from "./RunnerGateway.js"
import { Scheduler } from "./Scheduler.js"
import type { Transactor } from "./Transactor.js"
import { isTerminal, type RunnerRef, type Workflow, type WorkflowOutput } from "./Workflow.js"
import { WorkflowEventBus } from "./WorkflowEvents.js"
import { WorkflowRepository } from "./WorkflowRepository.js"
import { type FailureDetails, WorkflowTransition } from "./WorkflowStatus.js"

/** Tuning of the dispatcher. Every value has a production default. */
export interface DispatcherOptions {
  /** How often the dispatcher looks for runners with work it does not drive yet. */
  readonly scanInterval: Duration.DurationInput
  /** How often a driver looks for claimable work without a wake-up (expired leases of dead instances). */
  readonly claimInterval: Duration.DurationInput
  /** How often a driver reconciles its in-flight workflows with the runner. */
  readonly reconcileInterval: Duration.DurationInput
  /** Lease on a claimed workflow, renewed while it is being submitted. */
  readonly claimLease: Duration.DurationInput
  /** Workflows submitted to one runner at the same time. */
  readonly concurrencyPerRunner: number
  /** Attempts on one runner before the workflow moves to another. */
  readonly submitAttempts: number
  readonly retryDelay: Duration.DurationInput
  readonly retryDelayMax: Duration.DurationInput
  /** Runners tried before a workflow fails with RunnerUnavailable. */
  readonly maxRunnersTried: number
  /** A driver with no unfinished work for this long stops (closing the runner's WebSocket). */
  readonly idleAfter: Duration.DurationInput
  /** Minimum time between two reads of the runner's queue for queue positions. */
  readonly queueRefreshInterval: Duration.DurationInput
  /** Per-request budget for the runner's HTTP calls made by the driver. */
  readonly requestTimeout: Duration.DurationInput
}

export const defaultDispatcherOptions: DispatcherOptions = {
  scanInterval: Duration.seconds(2),
  claimInterval: Duration.seconds(1),
  reconcileInterval: Duration.seconds(5),
  claimLease: Duration.seconds(30),
  concurrencyPerRunner: 4,
  // About 30 s of retries per runner: long enough to ride out a ComfyUI restart.
  submitAttempts: 6,
  retryDelay: Duration.seconds(1),
  retryDelayMax: Duration.seconds(30),
  maxRunnersTried: 3,
  idleAfter: Duration.seconds(30),
  queueRefreshInterval: Duration.millis(250),
  requestTimeout: Duration.seconds(30)
}

type Deps =
  | WorkflowRepository
  | DispatchQueue
  | WorkflowEventBus
  | BlobStore
  | Transactor
  | RunnerGateway
  | Scheduler
  | AccountRepository
  | IdGenerator

/** How long a submission waits for the runner's WebSocket to open first (once per driver). */
const SOCKET_WAIT = Duration.seconds(5)

const RUNNER_LOST: Omit<FailureDetails, "exception_message"> = { error_node: null, exception_type: "RunnerLost" }

/** Reads of the runner's queue, shared by everyone who needs one taken after a given moment. */
const makeSnapshots = (read: Effect.Effect<QueueSnapshot, RunnerError>) => {
  let counter = 0
  let latest: { readonly seq: number; readonly value: QueueSnapshot } | undefined
  let pending: { readonly seq: number; readonly done: Deferred.Deferred<QueueSnapshot, RunnerError> } | undefined
  return {
    /** A mark: `after(mark())` is a snapshot started after this call. */
    mark: () => counter,
    after: (mark: number): Effect.Effect<QueueSnapshot, RunnerError> =>
      Effect.suspend(() => {
        if (latest !== undefined && latest.seq > mark) return Effect.succeed(latest.value)
        if (pending !== undefined && pending.seq > mark) return Deferred.await(pending.done)
        const seq = ++counter
        return Effect.flatMap(Deferred.make<QueueSnapshot, RunnerError>(), (done) => {
          pending = { seq, done }
          return read.pipe(
            Effect.tap((value) => Effect.sync(() => {
              if (latest === undefined || latest.seq < seq) latest = { seq, value }
            })),
            Effect.exit,
            Effect.flatMap((exit) => Effect.zipRight(Deferred.done(done, exit), exit))
          )
        })
      })
  }
}

/** Waits until `runner`'s work is done, driving it; returns when idle or when the lease is lost. */
export const driveRunner = (
  ref: RunnerRef,
  owner: string,
  lease: RunnerLease,
  wake: Queue.Queue<void>,
  options: DispatcherOptions
): Effect.Effect<void, never, Deps | Scope.Scope> =>
  Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const dispatch = yield* DispatchQueue
    const bus = yield* WorkflowEventBus
    const blobs = yield* BlobStore
    const gateway = yield* RunnerGateway
    const scheduler = yield* Scheduler
    const accounts = yield* AccountRepository
    const ids = yield* IdGenerator
    const context = yield* Effect.context<Deps>()
    const leaseMs = Duration.toMillis(options.claimLease)
    const runnerLabel = { runner_id: ref.id }

    const first = yield* scheduler.resolve(ref).pipe(Effect.orElseSucceed(() => Option.none<RunnerTarget>()))
    if (Option.isNone(first)) return
    let target = first.value

    /** Workflows this driver is submitting now (reconciliation leaves them alone). */
    const submitting = new Set<string>()
    /** Workflows whose end is being recorded (never twice at once). */
    const finishing = new Set<string>()
    /** Unfinished workflows of this runner as last seen (events for other prompts are ignored). */
    const known = new Set<string>()
    /** Overall progress of the prompts running now (Progress.ts), for the percent on their events. */
    const progress = new Map<string, PromptProgress>()
    /**
     * Done at the first `Connected` (or when waiting for it timed out once). ComfyUI drops the
     * events of a client that is not connected: a prompt posted before the socket is open would
     * run without any live event (seen on a real ComfyUI: the first workflow of an idle runner).
     */
    const socketOpen = yield* Deferred.make<void>()
    const awaitSocket = Deferred.await(socketOpen).pipe(
      Effect.timeout(SOCKET_WAIT),
      Effect.catchAll(() => Deferred.succeed(socketOpen, undefined))
    )

    const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      Effect.timeoutFail(effect, {
        duration: options.requestTimeout,
        onTimeout: () => new RunnerUnreachable({ runner_id: target.id, message: "the runner did not answer in time" })
      })

    const move = (id: string, event: WorkflowTransition) =>
      transition(id, event).pipe(
        Effect.map((t) => {
          if (isTerminal(t.after.status)) {
            known.delete(id)
            progress.delete(id)
          }
          return Option.some(t.after)
        }),
        Effect.catchTags({
          // Someone else moved it first (cancel, another path): nothing to do.
          IllegalTransition: () => Effect.succeedNone,
          NotFound: () => Effect.succeedNone
        }),
        Effect.provide(context)
      )

    const publish = (id: string, type: "progress" | "executing" | "output", data: unknown) =>
      bus.publish(id, [{ type, data }]).pipe(Effect.catchAll((e) => Effect.logWarning("could not publish an event", { workflow_id: id, error: e.message })))

    const snapshots = makeSnapshots(Effect.suspend(() => timed(gateway.queue(target))))

    /** Brings a workflow the runner has queued or is running up to date. */
    const observe = (w: Workflow, snapshot: QueueSnapshot) =>
      Effect.gen(function*() {
        let current: Workflow = w
        const running = snapshot.running.includes(w.id)
        const position = snapshot.pending.indexOf(w.id)
        if (current.status === "uploaded") {
          const queued = yield* move(w.id, WorkflowTransition.Queued({ prompt_id: w.id, queue_number: running ? 0 : position + 1 }))
          if (Option.isNone(queued)) return
          current = queued.value
        }
        if (running && current.status === "queued") yield* move(w.id, WorkflowTransition.Started({}))
        else if (position !== -1 && current.status === "queued" && current.queue_number !== position + 1) {
          yield* move(w.id, WorkflowTransition.QueueMoved({ queue_number: position + 1 }))
        }
      })

    /** Copies a finished prompt's output files into the blob store. */
    const copyOutputs = (w: Workflow, history: PromptHistory) =>
      Effect.forEach(history.outputs, (file) =>
        Effect.gen(function*() {
          const id = (yield* ids.next) as OutputId
          const key = outputBlobKey(w.id, id, file.filename)
          const download = yield* timed(gateway.download(target, file))
          const size = yield* blobs.put(key, download.stream.pipe(Stream.mapError((e) => new StorageError({ message: e.message }))), download.content_type)
          const output: WorkflowOutput = {
            id,
            workflow_id: w.id,
            node_id: file.node_id,
            filename: file.filename,
            subfolder: file.subfolder,
            type: file.type,
            content_type: download.content_type,
            size,
            blob_key: key,
            created_at: yield* DateTime.now
          }
          return output
        }).pipe(Effect.retry({ times: 2, schedule: Schedule.exponential("200 millis") })), { concurrency: 4 })

    /** Records how a prompt ended, from its history entry. */
    const finish = (w: Workflow, history: PromptHistory) =>
      Effect.gen(function*() {
        if (finishing.has(w.id) || isTerminal(w.status)) return
        finishing.add(w.id)
        yield* Effect.gen(function*() {
          let current = w
          const at = (ms: number | null) => (ms === null ? undefined : DateTime.unsafeMake(ms))
          if (current.status === "uploaded") {
            const q = yield* move(w.id, WorkflowTransition.Queued({ prompt_id: w.id, queue_number: 0 }))
            if (Option.isNone(q)) return
            current = q.value
          }
          if (current.status === "queued") {
            const s = yield* move(w.id, WorkflowTransition.Started({ at: at(history.started_at) }))
            if (Option.isNone(s)) return
            current = s.value
          }
          if (history.outcome === "success") {
            const copied = yield* Effect.either(copyOutputs(current, history))
            if (Either.isLeft(copied)) {
              yield* move(w.id, WorkflowTransition.Failed({
                error_node: null,
                exception_type: "OutputUnavailable",
                exception_message: `The run succeeded but its output files could not be copied from the runner: ${copied.left.message}`
              }))
              return
            }
            if (copied.right.length > 0) {
              yield* repo.addOutputs(copied.right)
              for (const o of copied.right) {
                yield* publish(w.id, "output", {
                  id: o.id, node_id: o.node_id, filename: o.filename, subfolder: o.subfolder, type: o.type,
                  content_type: o.content_type, size: o.size
                })
              }
            }
            yield* move(w.id, WorkflowTransition.Completed({ at: at(history.completed_at) }))
          } else if (history.outcome === "error") {
            yield* move(w.id, WorkflowTransition.Failed({
              error_node: history.error?.node_id ?? null,
              exception_type: history.error?.exception_type ?? "ExecutionError",
              exception_message: history.error?.exception_message ?? "The runner reported an error"
            }))
          } else {
            // Interrupted without a cancel from its owner (a cancelled workflow is already terminal).
            yield* move(w.id, WorkflowTransition.Failed({
              error_node: history.error?.node_id ?? null,
              exception_type: "ExecutionInterrupted",
              exception_message: "The run was interrupted on the runner"
            }))
          }
        }).pipe(Effect.ensuring(Effect.sync(() => finishing.delete(w.id))))
      })

    /** On `executing {node: null}` the history is written: read it and record the end. */
    const onPromptDone = (id: string) =>
      Effect.gen(function*() {
        const w = yield* repo.findById(id)
        if (Option.isNone(w) || isTerminal(w.value.status)) return
        const history = yield* timed(gateway.history(target, id)).pipe(
          Effect.flatMap(Option.match({ onNone: () => Effect.fail("not yet" as const), onSome: Effect.succeed })),
          Effect.retry({ times: 3, schedule: Schedule.spaced("200 millis") }),
          Effect.option
        )
        // Still nothing: reconciliation will look again.
        if (Option.isSome(history)) yield* finish(w.value, history.value)
      })

    /** Compares every in-flight workflow with the runner's queue and history. */
    const reconcile = Effect.gen(function*() {
      const current = yield* scheduler.resolve(ref)
      if (Option.isNone(current)) return
      target = current.value
      const unfinished = yield* repo.listUnfinishedOnRunner(ref.id, 10_000)
      known.clear()
      for (const w of unfinished) known.add(w.id)
      const inFlight = unfinished.filter((w) =>
        !submitting.has(w.id) && (w.status === "queued" || w.status === "running" || (w.status === "uploaded" && w.submitted_at !== null))
      )
      // The queue first: a prompt that leaves it in between is then found in the history.
      const snapshot = yield* snapshots.after(snapshots.mark())
      for (const w of inFlight) {
        if (snapshot.running.includes(w.id) || snapshot.pending.includes(w.id)) {
          yield* observe(w, snapshot)
          continue
        }
        const history = yield* timed(gateway.history(target, w.id))
        if (Option.isSome(history)) {
          yield* finish(w, history.value)
        } else if (w.status !== "uploaded") {
          yield* move(w.id, WorkflowTransition.Failed({
            ...RUNNER_LOST,
            exception_message: "The runner no longer knows this prompt: it was restarted or the prompt was removed from its queue"
          }))
        }
        // An uploaded one whose submission never arrived is submitted again by the claim loop.
      }
      // Prompts of workflows cancelled while the runner could not be told.
      for (const id of [...snapshot.running, ...snapshot.pending]) {
        if (known.has(id)) continue
        const w = yield* repo.findById(id)
        if (Option.isSome(w) && w.value.status === "cancelled" && (w.value.user_runner_id === ref.id || w.value.managed_runner_id === ref.id)) {
          yield* timed(gateway.cancel(target, id)).pipe(Effect.ignore)
        }
      }
    })

    const logFailure = (what: string) => (e: unknown) =>
      Effect.logWarning(what, { ...runnerLabel, error: typeof e === "object" && e !== null && "message" in e ? String(e.message) : String(e) })

    /** Queue positions of this runner's queued workflows, refreshed at most every `queueRefreshInterval`. */
    const positionsDirty = yield* Queue.sliding<void>(1)
    yield* Effect.gen(function*() {
      yield* Queue.take(positionsDirty)
      const unfinished = yield* repo.listUnfinishedOnRunner(ref.id, 10_000)
      const inFlight = unfinished.filter((w) =>
        !submitting.has(w.id) && (w.status === "queued" || w.status === "running" || (w.status === "uploaded" && w.submitted_at !== null))
      )
      if (inFlight.length > 0) {
        const snapshot = yield* snapshots.after(snapshots.mark())
        for (const w of inFlight) {
          if (snapshot.running.includes(w.id) || snapshot.pending.includes(w.id)) yield* observe(w, snapshot)
          // Left the queue: the runner wrote its history before saying so. This is how the end of a
          // prompt submitted under another client id (inherited after a takeover) is seen at once.
          else if (w.status !== "uploaded" && !finishing.has(w.id)) yield* Effect.forkScoped(onPromptDone(w.id).pipe(Effect.ignore))
        }
      }
      yield* Effect.sleep(options.queueRefreshInterval)
    }).pipe(Effect.catchAll(logFailure("could not refresh queue positions")), Effect.forever, Effect.forkScoped)

    const handleEvent = (event: RunnerEvent): Effect.Effect<void, unknown, Scope.Scope> => {
      switch (event._tag) {
        case "Connected":
          return Effect.zipRight(Deferred.succeed(socketOpen, undefined), reconcile)
        case "QueueChanged":
          return Queue.offer(positionsDirty, undefined)
        case "ExecutionStart":
          return Effect.gen(function*() {
            const w = yield* repo.findById(event.prompt_id)
            if (Option.isNone(w) || !isOnThisRunner(w.value)) return
            known.add(w.value.id)
            progress.set(w.value.id, startProgress(Object.keys(w.value.workflow_json)))
            if (w.value.status === "uploaded") {
              yield* move(w.value.id, WorkflowTransition.Queued({ prompt_id: w.value.id, queue_number: 0 }))
            }
            yield* move(w.value.id, WorkflowTransition.Started({ at: event.timestamp === null ? undefined : DateTime.unsafeMake(event.timestamp) }))
          })
        case "Executing": {
          const id = event.prompt_id
          return id !== null && known.has(id)
            ? Effect.flatMap(track(id, event), (percent) => publish(id, "executing", { node: event.node, percent }))
            : Effect.void
        }
        case "Progress": {
          const id = event.prompt_id
          return id !== null && known.has(id)
            ? Effect.flatMap(track(id, event), (percent) => publish(id, "progress", { node: event.node, value: event.value, max: event.max, percent }))
            : Effect.void
        }
        case "ExecutionCached":
        case "ProgressState":
        case "Executed":
          return known.has(event.prompt_id) ? Effect.asVoid(track(event.prompt_id, event)) : Effect.void
        case "PromptDone":
          if (!known.has(event.prompt_id)) return Effect.void
          progress.delete(event.prompt_id)
          return Effect.forkScoped(onPromptDone(event.prompt_id)).pipe(Effect.asVoid)
        default:
          // Success, error and interruption are read from the history when `PromptDone` says it is written.
          return Effect.void
      }
    }

    /** Advances a prompt's overall progress by `event` (its graph read once, e.g. after a takeover); the new percent. */
    const track = (id: string, event: RunnerEvent) =>
      Effect.gen(function*() {
        let current = progress.get(id)
        if (current === undefined) {
          const w = yield* repo.findById(id)
          current = startProgress(Option.isSome(w) ? Object.keys(w.value.workflow_json) : [])
        }
        const next = advanceProgress(current, event)
        progress.set(id, next)
        return progressPercent(next)
      })

    const isOnThisRunner = (w: Workflow) => w.user_runner_id === ref.id || w.managed_runner_id === ref.id

    const backoff = (attempt: number) =>
      Effect.flatMap(Random.next, (r) => {
        const base = Duration.toMillis(options.retryDelay) * 2 ** (attempt - 1)
        return Effect.sleep(Duration.millis(Math.min(Duration.toMillis(options.retryDelayMax), base) * (0.5 + r / 2)))
      })

    /** Moves a workflow to another eligible runner, or fails it with RunnerUnavailable. */
    const moveAway = (w: Workflow, reason: string) =>
      Effect.gen(function*() {
        const failUnavailable = move(w.id, WorkflowTransition.Failed({
          error_node: null,
          exception_type: "RunnerUnavailable",
          exception_message: `No runner could take the workflow: ${reason}`
        }))
        if (w.dispatch_attempts + 1 >= options.maxRunnersTried) return yield* failUnavailable
        const user = yield* accounts.findUser(w.user_id)
        if (Option.isNone(user)) return yield* failUnavailable
        const next = yield* Effect.either(scheduler.choose(user.value, w.tags, new Set([ref.id])))
        if (Either.isLeft(next)) return yield* failUnavailable
        const runner: RunnerRef = next.right.kind === "user"
          ? { kind: "user", id: next.right.id as RunnerId }
          : { kind: "managed", id: next.right.id as ManagedRunnerId }
        const moved = yield* move(w.id, WorkflowTransition.Reassigned({ runner }))
        if (Option.isSome(moved)) yield* dispatch.notify(next.right.id)
      })

    /** Submits one claimed workflow to this runner. */
    const submit = (claimed: Workflow) =>
      Effect.gen(function*() {
        const latest = yield* repo.findById(claimed.id)
        if (Option.isNone(latest) || !isOnThisRunner(latest.value) || isTerminal(latest.value.status)) return
        let w = latest.value
        const resolved = yield* scheduler.resolve(ref)
        if (Option.isNone(resolved) || resolved.value.status !== "active") {
          return yield* moveAway(w, `runner ${target.name} is disabled`)
        }
        target = resolved.value
        if (w.submitted_at !== null) {
          // A submission may have reached the runner before a restart or a timeout: ask first.
          const located = yield* Effect.either(Effect.gen(function*() {
            const snapshot = yield* snapshots.after(snapshots.mark())
            if (snapshot.running.includes(w.id) || snapshot.pending.includes(w.id)) return { snapshot, history: Option.none<PromptHistory>() }
            return { snapshot, history: yield* timed(gateway.history(target, w.id)) }
          }))
          if (Either.isRight(located)) {
            const { history, snapshot } = located.right
            if (Option.isSome(history)) return yield* finish(w, history.value)
            if (snapshot.running.includes(w.id) || snapshot.pending.includes(w.id)) return yield* observe(w, snapshot)
          } else {
            return yield* retryOrMove(w, located.left)
          }
        }
        const placeholders = yield* Either.match(findPlaceholders(w.workflow_json), {
          onLeft: () => Effect.succeed([]),
          onRight: Effect.succeed
        })
        const values = new Map(w.workflow_params)
        for (const [placeholder, key] of w.workflow_params) {
          if (!placeholder.startsWith("$file(")) continue
          const blob = yield* blobs.get(key)
          if (Option.isNone(blob)) {
            yield* move(w.id, WorkflowTransition.Failed({
              error_node: null,
              exception_type: "InputMissing",
              exception_message: `The uploaded file for ${placeholder} is no longer stored`
            }))
            return
          }
          const uploaded = yield* timed(gateway.uploadInput(target, {
            filename: `${w.id}_${sanitizeFilename(key.split("/").pop() ?? "file")}`,
            content_type: blob.value.content_type,
            content: blob.value.stream
          })).pipe(Effect.either)
          if (Either.isLeft(uploaded)) {
            if (uploaded.left._tag === "StorageError") return yield* Effect.fail(uploaded.left)
            return yield* retryOrMove(w, uploaded.left)
          }
          values.set(placeholder, inputReference(uploaded.right))
        }
        if (w.status === "accepted") {
          const up = yield* move(w.id, WorkflowTransition.Uploaded())
          if (Option.isNone(up)) return
          w = up.value
        }
        yield* awaitSocket
        // Fencing: after a pause past the lease, another instance may drive this runner now.
        if (!(yield* lease.held)) return
        const marked = yield* move(w.id, WorkflowTransition.Submitting())
        if (Option.isNone(marked)) return
        w = marked.value
        const prompt = substitute(w.workflow_json, placeholders, values)
        if (!(yield* lease.held)) return
        const sent = yield* timed(gateway.submit(target, {
          prompt_id: w.id,
          prompt,
          client_id: lease.clientId,
          extra_data: { wes_workflow_id: w.id }
        })).pipe(Effect.either)
        if (Either.isLeft(sent)) {
          if (sent.left._tag === "PromptRejected") {
            yield* move(w.id, WorkflowTransition.Rejected({
              error_node: sent.left.error_node,
              exception_type: sent.left.error_type,
              exception_message: sent.left.message
            }))
            return
          }
          return yield* retryOrMove(w, sent.left)
        }
        known.add(w.id)
        const snapshot = yield* Effect.either(snapshots.after(snapshots.mark()))
        const queued = yield* move(w.id, WorkflowTransition.Queued({
          prompt_id: w.id,
          queue_number: Either.isRight(snapshot)
            ? (snapshot.right.running.includes(w.id) ? 0 : snapshot.right.pending.indexOf(w.id) + 1 || null)
            : null
        }))
        if (Option.isSome(queued) && Either.isRight(snapshot) && snapshot.right.running.includes(w.id)) {
          yield* move(w.id, WorkflowTransition.Started({}))
        }
      })

    const attempts = new Map<string, number>()
    /** After a failed call: try the runner again with backoff, then move on. */
    const retryOrMove = (w: Workflow, error: { readonly message: string }): Effect.Effect<void, StorageError> =>
      Effect.gen(function*() {
        const n = (attempts.get(w.id) ?? 0) + 1
        attempts.set(w.id, n)
        yield* Effect.logWarning("runner call failed", { ...runnerLabel, workflow_id: w.id, attempt: n, error: error.message })
        if (n < options.submitAttempts) {
          yield* backoff(n)
          return yield* submit(w)
        }
        attempts.delete(w.id)
        yield* moveAway(w, `runner ${target.name} is unreachable (${error.message})`)
      })

    // Follow the runner's WebSocket; events are handled in order, slow ends are forked.
    yield* gateway.events(target, lease.clientId).pipe(
      Stream.runForEach((event) => handleEvent(event).pipe(Effect.catchAll(logFailure("could not handle a runner event")))),
      Effect.forkScoped
    )
    // Reconcile on a timer too: a silent socket (or a missed event) cannot leave work stuck.
    yield* reconcile.pipe(
      Effect.catchAll(logFailure("could not reconcile with the runner")),
      Effect.repeat(Schedule.spaced(options.reconcileInterval)),
      Effect.forkScoped
    )
    // Keep the claims of workflows being submitted alive.
    yield* Effect.suspend(() => submitting.size === 0 ? Effect.void : dispatch.renew([...submitting], owner, leaseMs)).pipe(
      Effect.catchAll(logFailure("could not renew claims")),
      Effect.repeat(Schedule.spaced(Duration.millis(Math.max(1000, leaseMs / 3)))),
      Effect.forkScoped
    )

    // Claim and submit until the runner has had nothing to do for `idleAfter`.
    let idleSince: number | undefined
    const claimLoop = Effect.gen(function*() {
      for (;;) {
        const free = options.concurrencyPerRunner - submitting.size
        if (free > 0) {
          const claimed = yield* dispatch.claim(ref.id, owner, free, leaseMs).pipe(
            Effect.catchAll((e) => Effect.as(logFailure("could not claim work")(e), []))
          )
          let fresh = 0
          for (const w of claimed) {
            if (submitting.has(w.id)) continue
            fresh++
            submitting.add(w.id)
            idleSince = undefined
            yield* submit(w).pipe(
              Effect.catchAll(logFailure("could not submit a workflow")),
              Effect.ensuring(Effect.zipRight(
                Effect.sync(() => submitting.delete(w.id)),
                Effect.zipRight(dispatch.release([w.id], owner).pipe(Effect.ignore), Queue.offer(wake, undefined))
              )),
              Effect.forkScoped
            )
          }
          if (fresh > 0 && claimed.length === free) continue
        }
        const woke = yield* Queue.take(wake).pipe(Effect.timeout(options.claimInterval), Effect.option)
        if (Option.isNone(woke) && submitting.size === 0) {
          const unfinished = yield* repo.listUnfinishedOnRunner(ref.id, 1).pipe(Effect.orElseSucceed(() => [{}]))
          const now = yield* Clock.currentTimeMillis
          if (unfinished.length > 0) idleSince = undefined
          else if (idleSince === undefined) idleSince = now
          else if (now - idleSince >= Duration.toMillis(options.idleAfter)) return
        }
      }
    })
    const fiber = yield* Effect.forkScoped(claimLoop)
    yield* Effect.raceFirst(Fiber.join(fiber), lease.lost)
  })
