/**
 * Graceful shutdown: once the server begins to stop, readiness turns 503 and every open event
 * stream ends, so closing the listener only waits for ordinary in-flight requests.
 */
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

export class Shutdown extends Context.Service<Shutdown, {
  /** Completes when shutdown begins. */
  readonly signal: Deferred.Deferred<void>
  readonly isShuttingDown: Effect.Effect<boolean>
}>()("@wes/http-node/Shutdown") {
  /** Completes the signal when its scope closes (place it so it closes before the listener). */
  static layer: Layer.Layer<Shutdown> = Layer.effect(
    Shutdown,
    Effect.gen(function*() {
      const signal = yield* Deferred.make<void>()
      yield* Effect.addFinalizer(() => Deferred.succeed(signal, undefined))
      return Shutdown.of({ signal, isShuttingDown: Deferred.isDone(signal) })
    })
  )
}
