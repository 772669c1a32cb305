/** Turning schema decode failures into the 400 `ValidationError` that names each field. */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { type FieldIssue, ValidationError } from "./Errors.js"

/** An issue as `ParseResult.ArrayFormatter` (and `HttpApiDecodeError`) report it. */
export interface DecodeIssue {
  readonly _tag: string
  readonly path: ReadonlyArray<PropertyKey>
  readonly message: string
}

/** Most issues one 400 lists (a body with 100,000 unknown fields is one answer, not 100,000). */
const MAX_DETAILS = 20

/**
 * Effect's own wording (`Expected { readonly [x: string]: string }, actual 12345`) said as the
 * contract says it (`must be an object of strings`), without echoing the value sent.
 */
const inContractWords = (message: string): string => {
  if (message.includes("DateTime")) return "must be an ISO 8601 timestamp"
  const m = /^Expected ([\s\S]+?), actual /.exec(message)
  if (m === null) return message
  const expected = m[1]!
  if (expected === "string" || expected === "number" || expected === "null") return `must be ${expected === "null" ? "null" : `a ${expected}`}`
  if (expected === "boolean") return "must be true or false"
  if (expected === "undefined") return "must be left out"
  if (expected.startsWith("{")) return expected.endsWith("string }") ? "must be an object of strings" : "must be an object"
  if (/^(Readonly)?Array</.test(expected)) return expected.includes("string") ? "must be an array of strings" : "must be an array"
  if (/^an? [a-z]/.test(expected)) return `must be ${expected}`
  return "is not valid here"
}

const describeIssue = (issue: DecodeIssue): FieldIssue => {
  const field = issue.path.length === 0 ? "body" : issue.path.map(String).join(".")
  const message = issue._tag === "Missing"
    ? "is required"
    : issue._tag === "Unexpected"
    ? "is not an accepted field"
    : inContractWords(issue.message)
  return { field, message }
}

/** The alternatives of a nullable field (`must be a string`, `must be null`) as one issue. */
const mergeAlternatives = (issues: ReadonlyArray<FieldIssue>): ReadonlyArray<FieldIssue> => {
  const out: Array<FieldIssue> = []
  for (const issue of issues) {
    const same = out.findIndex((o) => o.field === issue.field && o.message.startsWith("must be ") && issue.message.startsWith("must be "))
    if (same === -1) out.push(issue)
    else if (issue.message === "must be null") out[same] = { field: issue.field, message: `${out[same]!.message} or null` }
    else if (out[same]!.message === "must be null") out[same] = { field: issue.field, message: `${issue.message} or null` }
  }
  return out
}

/**
 * Drops the noise optional fields add ("must be left out" next to the real reason) and
 * repeats of the same message for the same field.
 */
const meaningful = (issues: ReadonlyArray<FieldIssue>): ReadonlyArray<FieldIssue> => {
  const seen = new Set<string>()
  return issues.filter((issue, _, all) => {
    if (issue.message === "must be left out" && all.some((o) => o.field === issue.field && o !== issue)) return false
    const key = `${issue.field}\u0000${issue.message}`
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}

/** A `ValidationError` whose details list every field the issues mention. */
export const fromDecodeIssues = (issues: ReadonlyArray<DecodeIssue>): ValidationError => {
  const details = mergeAlternatives(meaningful(issues.map(describeIssue))).slice(0, MAX_DETAILS)
  const first = details[0] ?? { field: "body", message: "is invalid" }
  return new ValidationError({ message: `${first.field}: ${first.message}`, details })
}

/** A `ValidationError` whose details list every field a decode failure mentions. */
export const fromParseError = (error: ParseResult.ParseError): ValidationError =>
  fromDecodeIssues(ParseResult.ArrayFormatter.formatErrorSync(error))

/** Decodes `input` with `schema`, failing with a `ValidationError` (all errors, excess fields rejected). */
export const decodeRequest = <A, I>(schema: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknownExit(schema, { errors: "all", onExcessProperty: "error" })
  return (input: unknown): Effect.Effect<A, ValidationError> =>
    Result.match(decode(input), { onFailure: (e) => Effect.fail(fromParseError(e)), onSuccess: Effect.succeed })
}

/** Fails with `ValidationError.field` unless `value` is a string of `min`..`max` characters. */
export const requireText = (
  field: string,
  value: unknown,
  min: number,
  max: number
): Result.Result<string, ValidationError> => {
  if (value === undefined || value === null || value === "") {
    return min > 0 ? Result.fail(ValidationError.field(field, "is required")) : Result.succeed("")
  }
  if (typeof value !== "string") return Result.fail(ValidationError.field(field, "must be a string"))
  if (value.length < min || value.length > max) {
    return Result.fail(ValidationError.field(field, `must be ${min}-${max} characters`))
  }
  return Result.succeed(value)
}
