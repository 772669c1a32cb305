/** Minimal assertions for suites that must not depend on a test framework. */
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"

/** A failed expectation of a conformance suite. */
export class ConformanceFailure extends Error {
  override readonly name = "ConformanceFailure"
}

const show = (u: unknown): string =>
  JSON.stringify(u, (_k, v: unknown) => (DateTime.isDateTime(v) ? DateTime.formatIso(v) : v instanceof Uint8Array ? `<${v.length} bytes>` : v))

/** Structural equality over JSON-like values, `DateTime`s and byte arrays. */
export const deepEqual = (a: unknown, b: unknown): boolean => {
  if (Object.is(a, b)) return true
  if (DateTime.isDateTime(a) || DateTime.isDateTime(b)) {
    return DateTime.isDateTime(a) && DateTime.isDateTime(b) && DateTime.toEpochMillis(a) === DateTime.toEpochMillis(b)
  }
  if (a instanceof Uint8Array || b instanceof Uint8Array) {
    return a instanceof Uint8Array && b instanceof Uint8Array && a.length === b.length && a.every((x, i) => x === b[i])
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => deepEqual(x, b[i]))
  }
  if (typeof a === "object" && typeof b === "object" && a !== null && b !== null) {
    const ka = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined)
    const kb = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined)
    return ka.length === kb.length &&
      ka.every((k) => deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
  }
  return false
}

/** Dies with a readable message unless `actual` equals `expected`. */
export const equal = (actual: unknown, expected: unknown, what: string): Effect.Effect<void> =>
  deepEqual(actual, expected)
    ? Effect.void
    : Effect.die(new ConformanceFailure(`${what}: expected ${show(expected)}, got ${show(actual)}`))

/** Dies unless `condition` holds. */
export const ok = (condition: boolean, what: string): Effect.Effect<void> =>
  condition ? Effect.void : Effect.die(new ConformanceFailure(what))

/** The error of an effect that must fail (dies if it succeeds). */
export const failure = <A, E, R>(effect: Effect.Effect<A, E, R>, what: string): Effect.Effect<E, never, R> =>
  Effect.flatMap(Effect.result(effect), (r) =>
    r._tag === "Failure" ? Effect.succeed(r.failure) : Effect.die(new ConformanceFailure(`${what}: expected a failure, got ${show(r.success)}`)))
