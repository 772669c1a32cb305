/** Groups store operations that must commit together (a state change and its event). */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { StorageError } from "./Errors.js"

export class Transactor extends Context.Tag("@wes/core/Transactor")<Transactor, {
  readonly withTransaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | StorageError, R>
}>() {
  /** For stores where each operation is already atomic and nothing can crash in between (memory). */
  static Passthrough: Layer.Layer<Transactor> = Layer.succeed(Transactor, { withTransaction: (effect) => effect })
}
