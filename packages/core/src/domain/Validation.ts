/**
 * Turning schema decode failures into the 400 `ValidationError` that names each field. The
 * wording comes from the issue tree itself (`SchemaIssue`): where each problem is (its path),
 * what kind it is (a missing or unexpected key, a value of the wrong type, a failed check) and
 * the schema's own messages (a `message` annotation on a check, a schema or a transformation);
 * never from the text of Effect's messages, and never echoing the value sent.
 */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import type * as SchemaIssue from "effect/SchemaIssue"
import { type FieldIssue, ValidationError } from "./Errors.js"
import { isJsonObject } from "./Json.js"

/**
 * One problem of a rejected request: where, and what is wrong in the contract's words. A
 * `Missing` issue reads "is required" and an `Unexpected` one "is not an accepted field",
 * whatever their message.
 */
export interface DecodeIssue {
  readonly _tag: string
  readonly path: ReadonlyArray<PropertyKey>
  readonly message: string
}

/** Most issues one 400 lists (a body with 100,000 unknown fields is one answer, not 100,000). */
const MAX_DETAILS = 20

const fieldOf = (path: ReadonlyArray<PropertyKey>): string => (path.length === 0 ? "body" : path.map(String).join("."))

const describeIssue = (issue: DecodeIssue): FieldIssue => ({
  field: fieldOf(issue.path),
  message: issue._tag === "Missing" ? "is required" : issue._tag === "Unexpected" ? "is not an accepted field" : issue.message
})

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
    if (issue.message === LEFT_OUT && all.some((o) => o.field === issue.field && o !== issue)) return false
    const key = `${issue.field}\u0000${issue.message}`
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}

const fromFieldIssues = (issues: ReadonlyArray<FieldIssue>): ValidationError => {
  const details = mergeAlternatives(meaningful(issues)).slice(0, MAX_DETAILS)
  const first = details[0] ?? { field: "body", message: "is invalid" }
  return new ValidationError({ message: `${first.field}: ${first.message}`, details })
}

/** A `ValidationError` whose details list every field the issues mention. */
export const fromDecodeIssues = (issues: ReadonlyArray<DecodeIssue>): ValidationError =>
  fromFieldIssues(issues.map(describeIssue))

// ---------------------------------------------------------------------------------------------
// The issue tree, in the contract's words

const NOT_VALID = "is not valid here"
const LEFT_OUT = "must be left out"

/** A string annotation (`message`, `expected`, `identifier`) of an AST node, a check or an issue. */
const annotation = (annotations: Schema.Annotations.Annotations | undefined, key: string): string | undefined => {
  const value = annotations?.[key]
  return typeof value === "string" ? value : undefined
}

/** What a check or a transformation expects (`an integer`), said as the contract says it. */
const expectedWords = (expected: string | undefined): string | undefined =>
  expected !== undefined && /^an? [a-z]/.test(expected) ? `must be ${expected}` : undefined

/** An array or record whose items are strings (once encoded). */
const ofStrings = (ast: SchemaAST.AST | undefined): boolean =>
  ast !== undefined && SchemaAST.isString(SchemaAST.toEncoded(ast))

/**
 * What a value must be to have the type of `ast`, one sentence per alternative of a union: the
 * schema's `message` annotation, else its wire form (a timestamp must be a string) in words.
 */
const typeWords = (ast: SchemaAST.AST): ReadonlyArray<string> => {
  // An optional field's `undefined` is a field left out, whatever its wire form (a JSON codec's `null`).
  if (ast._tag === "Undefined" || ast._tag === "Void") return [LEFT_OUT]
  // A transformed value must have its wire type (its `message` is for a failed transformation).
  if (ast.encoding !== undefined) return typeWords(SchemaAST.toEncoded(ast))
  // A declaration's annotations are its last check's, where `annotate` puts them (JsonObject's
  // check documents it); other types' checks carry the messages of their own failures.
  const message = annotation(ast._tag === "Declaration" ? SchemaAST.resolve(ast) : ast.annotations, "message")
  if (message !== undefined) return [message]
  switch (ast._tag) {
    case "String":
      return ["must be a string"]
    case "Number":
      return ["must be a number"]
    case "Boolean":
      return ["must be true or false"]
    case "Null":
      return ["must be null"]
    case "Union":
      return ast.types.flatMap(typeWords)
    case "Arrays":
      return [ast.elements.length === 0 && ast.rest.length === 1 && ofStrings(ast.rest[0]) ? "must be an array of strings" : "must be an array"]
    case "Objects":
      if (ast.propertySignatures.length === 0 && ast.indexSignatures.length > 0) {
        return [ast.indexSignatures.every((s) => ofStrings(s.type)) ? "must be an object of strings" : "must be an object"]
      }
      // A named request body is not just any object: what it is, is in the API's documentation.
      return [annotation(ast.annotations, "identifier") === undefined ? "must be an object" : NOT_VALID]
    default:
      return [NOT_VALID]
  }
}

/** The AST an issue is about, when it has one (to tell which alternative of a union failed how). */
const astOf = (issue: SchemaIssue.Issue): SchemaAST.AST | undefined =>
  issue._tag === "Composite" || issue._tag === "AnyOf" || issue._tag === "Encoding" || issue._tag === "InvalidType"
    ? issue.ast
    : undefined

type Out = Array<FieldIssue>

const push = (out: Out, path: ReadonlyArray<PropertyKey>, message: string) => {
  out.push({ field: fieldOf(path), message })
}

/** The message of a failed check: its own `message`, else the failure's, else what it expects. */
const checkMessage = (issue: SchemaIssue.Filter): string | undefined => {
  const own = annotation(issue.filter.annotations, "message")
  if (own !== undefined) return own
  const inner = issue.issue
  if (inner._tag !== "InvalidValue") return undefined
  return annotation(inner.annotations, "message") ??
    expectedWords(annotation(inner.annotations, "expected") ?? annotation(issue.filter.annotations, "expected")) ??
    NOT_VALID
}

/**
 * The optional field of `ast` (an object) that `issue` is about, when it was sent: its value failed.
 * The contract reads such a field as it read an optional one of Effect 3 (a union with `undefined`):
 * besides what is wrong with the value, "must be left out" (dropped when the field has its own
 * message, kept when the problems are deeper, as `headers.a`).
 */
const sentOptionalField = (ast: SchemaAST.AST, issue: SchemaIssue.Issue): PropertyKey | undefined => {
  if (issue._tag !== "Pointer" || issue.path.length !== 1 || !SchemaAST.isObjects(ast)) return undefined
  if (issue.issue._tag === "MissingKey" || issue.issue._tag === "UnexpectedKey") return undefined
  const key = issue.path[0]!
  return ast.propertySignatures.some((p) => p.name === key && SchemaAST.isOptional(p.type)) ? key : undefined
}

/** Every problem of `issue`, at `path`, in the contract's words. */
const walk = (issue: SchemaIssue.Issue, path: ReadonlyArray<PropertyKey>, out: Out): void => {
  switch (issue._tag) {
    case "Pointer":
      return walk(issue.issue, [...path, ...issue.path], out)
    case "Composite": {
      const member = (i: SchemaIssue.Issue) => {
        walk(i, path, out)
        const field = sentOptionalField(issue.ast, i)
        if (field !== undefined) push(out, [...path, field], LEFT_OUT)
      }
      // The checks of one value report their first failure only, as a chain of refinements does.
      const [first, ...rest] = issue.issues
      member(first)
      if (first._tag !== "Filter") for (const i of rest) member(i)
      return
    }
    case "Filter": {
      const message = checkMessage(issue)
      return message === undefined ? walk(issue.issue, path, out) : push(out, path, message)
    }
    case "Encoding": {
      // The value had the wire type but could not be turned into the schema's: its own message.
      const message = issue.issue._tag === "InvalidType" ? undefined : annotation(issue.ast.annotations, "message")
      return message === undefined ? walk(issue.issue, path, out) : push(out, path, message)
    }
    case "AnyOf": {
      // Each alternative says what it wanted: those tried, why they failed; the others, their type.
      if (issue.issues.length === 0) {
        for (const words of typeWords(issue.ast)) push(out, path, words)
        return
      }
      const attributed = new Set<SchemaIssue.Issue>()
      for (const member of issue.ast.types) {
        const tried = issue.issues.filter((i) => astOf(i) === member)
        if (tried.length === 0) for (const words of typeWords(member)) push(out, path, words)
        for (const i of tried) {
          attributed.add(i)
          walk(i, path, out)
        }
      }
      for (const i of issue.issues) if (!attributed.has(i)) walk(i, path, out)
      return
    }
    case "InvalidType":
      for (const words of typeWords(issue.ast)) push(out, path, words)
      return
    case "InvalidValue":
      return push(
        out,
        path,
        annotation(issue.annotations, "message") ?? expectedWords(annotation(issue.annotations, "expected")) ?? NOT_VALID
      )
    case "MissingKey":
      return push(out, path, annotation(issue.annotations, "messageMissingKey") ?? "is required")
    case "UnexpectedKey":
      return push(out, path, annotation(issue.ast.annotations, "messageUnexpectedKey") ?? "is not an accepted field")
    case "Forbidden":
    case "OneOf":
      return push(out, path, NOT_VALID)
  }
}

/** A `ValidationError` whose details list every field a schema issue mentions. */
export const fromSchemaIssue = (issue: SchemaIssue.Issue): ValidationError => {
  const out: Out = []
  walk(issue, [], out)
  return fromFieldIssues(out)
}

/** A `ValidationError` whose details list every field a decode failure (`Schema.SchemaError`) mentions. */
export const fromSchemaError = (error: Schema.SchemaError): ValidationError => fromSchemaIssue(error.issue)

const requestOptions: SchemaAST.ParseOptions = { errors: "all", onExcessProperty: "error" }

/**
 * A field sent as `undefined` where the request's field is optional is a field left out, as Effect
 * 3's `optional` read it (JSON has no `undefined`; an in-process caller writes `{ tags: opts.tags }`).
 */
const withoutUndefinedOptionals = (ast: SchemaAST.AST) => {
  const encoded = SchemaAST.toEncoded(ast)
  const optional = SchemaAST.isObjects(encoded)
    ? encoded.propertySignatures.flatMap((p) => (SchemaAST.isOptional(p.type) && typeof p.name === "string" ? [p.name] : []))
    : []
  return (input: unknown): unknown => {
    if (!isJsonObject(input) || !optional.some((k) => Object.hasOwn(input, k) && input[k] === undefined)) return input
    const out: Record<string, unknown> = { ...input }
    for (const k of optional) if (Object.hasOwn(out, k) && out[k] === undefined) delete out[k]
    return out
  }
}

/** Decodes `input` with `schema`, failing with a `ValidationError` (all errors, excess fields rejected). */
export const decodeRequest = <S extends Schema.ConstraintDecoder<unknown>>(schema: S) => {
  const decode = Schema.decodeUnknownResult(schema, requestOptions)
  const leftOut = withoutUndefinedOptionals(schema.ast)
  return (input: unknown): Effect.Effect<S["Type"], ValidationError> =>
    Result.match(decode(leftOut(input)), { onFailure: (e) => Effect.fail(fromSchemaError(e)), onSuccess: Effect.succeed })
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
