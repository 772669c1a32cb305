/**
 * Probe only (BENCH_COUNT_OPS=on): counts the work of Effect's fiber runtime through its public
 * hook, `Tracer.context`: a tracer that has one is called by the run loop for every primitive it
 * evaluates in a fiber under that tracer. `total` is those evaluations (Effect 4 counts what the
 * run loop dispatches: a continuation that the runtime calls inline with the previous step's
 * value is part of its step, so these are fewer than Effect 3's per-instruction counts and the two
 * are not comparable); `byOp` splits them by the primitive's kind (the `op` or `_tag` of its
 * `toJSON`, else its `_id`: Sync, OnSuccess, Iterator, Success, ...); `bySrc` samples every OPS_EVERY-th one by
 * kind and the source of the function it carries; `trace`, when set, records the first 5,000.
 * Deterministic where CPU time is not, for work per workflow or per request.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Predicate from "effect/Predicate"
import * as Tracer from "effect/Tracer"

export const opStats = {
  total: 0,
  byOp: {} as Record<string, number>,
  bySrc: new Map<string, number>(),
  trace: undefined as Array<string> | undefined
}

const every = Number(process.env["OPS_EVERY"] ?? 20)

/** The primitive's public description (Inspectable `toJSON`): `{ _id: "Effect", op, args }` or `{ _id: "Exit", _tag }`. */
const describe = (primitive: unknown): { readonly kind: string; readonly fn: unknown } => {
  if (!Predicate.hasProperty(primitive, "toJSON") || !Predicate.isFunction(primitive.toJSON)) return { kind: "unknown", fn: undefined }
  const json: unknown = primitive.toJSON()
  if (!Predicate.isObject(json)) return { kind: "unknown", fn: undefined }
  const kind = "op" in json ? String(json.op) : "_tag" in json ? String(json._tag) : "_id" in json ? String(json._id) : "unknown"
  const args = "args" in json ? json.args : undefined
  return { kind, fn: Array.isArray(args) ? args.find(Predicate.isFunction) : args }
}

const source = (kind: string, fn: unknown) =>
  Predicate.isFunction(fn) ? `${kind} ${fn.toString().slice(0, 160).replace(/\s+/g, " ")}` : kind

let seen = 0
const count = (primitive: unknown) => {
  const { fn, kind } = describe(primitive)
  opStats.total++
  opStats.byOp[kind] = (opStats.byOp[kind] ?? 0) + 1
  if (opStats.trace !== undefined && opStats.trace.length < 5000) opStats.trace.push(source(kind, fn))
  if (++seen % every === 0) {
    const src = source(kind, fn)
    opStats.bySrc.set(src, (opStats.bySrc.get(src) ?? 0) + every)
  }
}

/** `inner` (its spans and its own `context`, if any), counting every primitive evaluated under it. */
export const countingTracer = (inner: Tracer.Tracer): Tracer.Tracer =>
  Tracer.make({
    span: (options) => inner.span(options),
    context: (primitive, fiber) => {
      count(primitive)
      return inner.context === undefined ? primitive["~effect/Effect/evaluate"](fiber) : inner.context(primitive, fiber)
    }
  })

/** The tracer in place, wrapped by `countingTracer`: provide it over everything to be counted. */
export const opCounterLayer: Layer.Layer<never> = Layer.effect(Tracer.Tracer, Effect.map(Effect.tracer, countingTracer))
