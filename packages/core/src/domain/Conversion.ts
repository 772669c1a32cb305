/**
 * A placeholder's text converted to what the input it fills takes: BOOLEAN from
 * `true/false/yes/no/1/0` (any case), INT and FLOAT from decimal numbers within the declared
 * `min`/`max` (an INT also on the editor's grid of `step`), COMBO one of the options (a numeric
 * option is sent as the number). ComfyUI itself checks only `min`/`max` and V1 combos; it applies
 * `bool()` to a BOOLEAN, so the text "false" would be True. An INT past 2^53 is sent as its
 * digits, which ComfyUI's `int()` reads exactly.
 */
import * as Result from "effect/Result"
import type { InputType } from "./InputTypes.js"

const TRUE = /^(true|yes|1)$/i
const FALSE = /^(false|no|0)$/i
const INT = /^[+-]?\d+$/
const FLOAT = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i
/** How many combo options a message lists before it only counts them (as ComfyUI does). */
const LISTED_OPTIONS = 20

const range = (t: { readonly min?: number; readonly max?: number }): string =>
  t.min !== undefined && t.max !== undefined
    ? ` from ${t.min} to ${t.max}`
    : t.min !== undefined
    ? ` of at least ${t.min}`
    : t.max !== undefined
    ? ` of at most ${t.max}`
    : ""

/** An INT's grid, when it has one: a whole `step` above 1. */
const gridOf = (t: { readonly step?: number }): number | undefined =>
  t.step !== undefined && Number.isInteger(t.step) && t.step > 1 ? t.step : undefined

/** What an input takes, as an error message says it: `a BOOLEAN (true/false, yes/no or 1/0)`. */
export const describeType = (t: InputType): string => {
  switch (t.type) {
    case "BOOLEAN":
      return "a BOOLEAN (true/false, yes/no or 1/0)"
    case "INT": {
      const grid = gridOf(t)
      return `an INT${range(t)}${grid === undefined ? "" : ` in steps of ${grid}`}`
    }
    case "FLOAT":
      return `a FLOAT${range(t)}`
    case "COMBO":
      return t.options.length > LISTED_OPTIONS
        ? `one of its ${t.options.length} options`
        : `one of ${t.options.map((o) => JSON.stringify(String(o))).join(", ")}`
  }
}

/** Whole bounds of an INT as big integers (a bound past 2^53 is a rounded double, as ComfyUI's JSON gives it). */
const bigBound = (n: number | undefined, round: (x: number) => number): bigint | undefined =>
  n === undefined ? undefined : BigInt(round(n))

const toInt = (t: Extract<InputType, { type: "INT" }>, text: string): unknown => {
  if (!INT.test(text)) return undefined
  const v = BigInt(text)
  const min = bigBound(t.min, Math.ceil)
  const max = bigBound(t.max, Math.floor)
  if ((min !== undefined && v < min) || (max !== undefined && v > max)) return undefined
  const grid = gridOf(t)
  // The editor snaps to min + k * step (ComfyUI's frontend, `useIntWidget`).
  if (grid !== undefined && (v - (min ?? 0n)) % BigInt(grid) !== 0n) return undefined
  const n = Number(v)
  return Number.isSafeInteger(n) ? n : v.toString()
}

const toFloat = (t: Extract<InputType, { type: "FLOAT" }>, text: string): unknown => {
  if (!FLOAT.test(text)) return undefined
  const v = Number(text)
  if (!Number.isFinite(v) || (t.min !== undefined && v < t.min) || (t.max !== undefined && v > t.max)) return undefined
  return v
}

/** The JSON value `text` becomes for an input of type `t`; Left: it cannot, with what the input takes. */
export const convertTo = (t: InputType, text: string): Result.Result<unknown, string> => {
  let value: unknown
  switch (t.type) {
    case "BOOLEAN":
      value = TRUE.test(text.trim()) ? true : FALSE.test(text.trim()) ? false : undefined
      break
    case "INT":
      value = toInt(t, text.trim())
      break
    case "FLOAT":
      value = toFloat(t, text.trim())
      break
    case "COMBO":
      value = t.options.find((o) => String(o) === text)
  }
  return value === undefined ? Result.fail(describeType(t)) : Result.succeed(value)
}

/**
 * The type a placeholder's own values suggest, for a runner whose types are not known: its
 * default, or every option of a choice, all `true`/`false` (any case): BOOLEAN; all whole
 * numbers: INT; all numbers: FLOAT. Anything else: none (the text is sent as it is).
 */
export const inferType = (p: { readonly default: string | undefined; readonly options: ReadonlyArray<string> }): InputType | undefined => {
  const values = p.options.length > 0 ? p.options : p.default === undefined ? [] : [p.default]
  if (values.length === 0) return undefined
  const all = (re: RegExp) => values.every((v) => re.test(v.trim()))
  if (all(/^(true|false)$/i)) return { type: "BOOLEAN" }
  if (all(INT)) return { type: "INT" }
  if (all(FLOAT)) return { type: "FLOAT" }
  return undefined
}
