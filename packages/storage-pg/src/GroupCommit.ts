/**
 * Group commit: writes that arrive while one is in flight are written together, in one statement,
 * by one worker, in the order they arrived. Idle, a write goes out at once (no added latency);
 * under load, each statement carries everything that queued up behind the previous one, which is
 * how a burst of transitions costs a handful of statements instead of one each. Items with the
 * same key never share a batch (a statement can change a row once); the later ones wait for the
 * next batch, which keeps the order of each key's writes.
 *
 * Effect 4's queue has no `takeUpTo`, and `Queue.takeBetween(queue, 0, n)` returns nothing at
 * once (a minimum of 0 is satisfied by an empty take): the worker waits with
 * `takeBetween(queue, 1, n)` (at least one, then whatever else is there, up to `n`) and, with
 * items carried over, takes more only when the queue holds some (never waiting).
 */
import * as Arr from "effect/Array"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"

export interface GroupCommitOptions<A, B, E> {
  /** Writes a batch; one result per item, in order. */
  readonly write: (items: readonly [A, ...Array<A>]) => Effect.Effect<ReadonlyArray<B>, E>
  /** Items with equal keys go to different batches. */
  readonly key: (item: A) => string
  /** Most items per statement. */
  readonly maxBatch: number
  /** Most items waiting; callers beyond it wait for room (back-pressure). */
  readonly capacity: number
}

interface Pending<A, B, E> {
  readonly item: A
  readonly done: Deferred.Deferred<B, E>
}

/** A writer of single items, batched; the worker lives as long as the scope. */
export const makeGroupCommit = <A, B, E>(
  options: GroupCommitOptions<A, B, E>
): Effect.Effect<(item: A) => Effect.Effect<B, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const queue = yield* Effect.acquireRelease(Queue.bounded<Pending<A, B, E>>(options.capacity), Queue.shutdown)
    /** Items taken from the queue that had to wait for a later batch, oldest first. */
    let carried: Array<Pending<A, B, E>> = []

    /** Up to `n` items already in the queue; none (without waiting) when it is empty. */
    const takeAvailable = (n: number) =>
      Effect.flatMap(Queue.size(queue), (size) => size > 0 && n > 0 ? Queue.takeBetween(queue, 1, n) : Effect.succeed([]))

    const nextBatch = Effect.gen(function*() {
      const all = carried.length > 0
        ? [...carried, ...yield* takeAvailable(options.maxBatch - carried.length)]
        : yield* Queue.takeBetween(queue, 1, options.maxBatch)
      const batch: Array<Pending<A, B, E>> = []
      const keys = new Set<string>()
      const waitingKeys = new Set<string>()
      carried = []
      for (const p of all) {
        const k = options.key(p.item)
        // Once an item of a key waits, the later ones of that key wait too: each key's writes keep their order.
        if (keys.has(k) || waitingKeys.has(k) || batch.length >= options.maxBatch) {
          waitingKeys.add(k)
          carried.push(p)
        } else {
          keys.add(k)
          batch.push(p)
        }
      }
      return batch
    })

    const worker = Effect.gen(function*() {
      const batch = yield* nextBatch
      const items = batch.map((p) => p.item)
      // A batch is never empty: it holds the oldest waiting item at least.
      if (!Arr.isArrayNonEmpty(items)) return
      const exit = yield* Effect.exit(options.write(items))
      if (exit._tag === "Failure") {
        for (const p of batch) yield* Deferred.failCause(p.done, exit.cause)
      } else {
        for (const [i, p] of batch.entries()) yield* Deferred.succeed(p.done, exit.value[i]!)
      }
    }).pipe(Effect.forever)
    yield* Effect.forkScoped(worker)

    return (item: A) =>
      Effect.flatMap(Deferred.make<B, E>(), (done) =>
        Effect.andThen(Queue.offer(queue, { item, done }), Deferred.await(done)))
  })
