/** One case of the store conformance suite: a name and an effect over a fresh store. */
import type * as Effect from "effect/Effect"
import type { StoreServices } from "../UseCases.js"

export interface ConformanceCase {
  readonly name: string
  readonly run: Effect.Effect<void, unknown, StoreServices>
}

export const c = (name: string, run: Effect.Effect<void, unknown, StoreServices>): ConformanceCase => ({ name, run })
