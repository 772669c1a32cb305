/**
 * Python semantics the fake ComfyUI mirrors in its messages: `repr`/`str` of JSON values, the
 * `int()`/`float()`/`bool()` conversions of input validation, and Python exceptions as data.
 */

/** A Python exception: its qualified type name (as `full_type_name` prints it) and `str(ex)`. */
export class PyError extends Error {
  constructor(readonly pyType: string, message: string) {
    super(message)
    this.name = pyType
  }

  /** A plausible `traceback.format_tb` list for this exception. */
  traceback(where: string): Array<string> {
    return [`  File "${where}", line 1, in <fake>\n    raise ${this.pyType}(${pyRepr(this.message)})\n`]
  }
}

const escapeString = (s: string, quote: string): string => {
  let out = ""
  for (const ch of s) {
    const code = ch.codePointAt(0)!
    if (ch === "\\") out += "\\\\"
    else if (ch === quote) out += `\\${quote}`
    else if (ch === "\n") out += "\\n"
    else if (ch === "\r") out += "\\r"
    else if (ch === "\t") out += "\\t"
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, "0")}`
    else out += ch
  }
  return out
}

/** Python `repr(float)` for the values JSON can carry. */
export const pyFloat = (n: number): string => {
  if (Number.isNaN(n)) return "nan"
  if (!Number.isFinite(n)) return n > 0 ? "inf" : "-inf"
  if (Number.isInteger(n) && Math.abs(n) < 1e16) return `${n}.0`
  return String(n).replace(/e([+-])(\d)$/, "e$10$2")
}

/** Python `repr` of a JSON value (numbers that are integral print as ints). */
export const pyRepr = (v: unknown): string => {
  if (v === null || v === undefined) return "None"
  if (typeof v === "boolean") return v ? "True" : "False"
  if (typeof v === "number") return Number.isInteger(v) ? String(v) : pyFloat(v)
  if (typeof v === "string") {
    const quote = v.includes("'") && !v.includes("\"") ? "\"" : "'"
    return `${quote}${escapeString(v, quote)}${quote}`
  }
  if (Array.isArray(v)) return `[${v.map(pyRepr).join(", ")}]`
  if (typeof v === "object") {
    return `{${Object.entries(v).map(([k, x]) => `${pyRepr(k)}: ${pyRepr(x)}`).join(", ")}}`
  }
  return String(v)
}

/** Python `str` of a JSON value. */
export const pyStr = (v: unknown): string => typeof v === "string" ? v : pyRepr(v)

const typeName = (v: unknown): string => {
  if (v === null || v === undefined) return "NoneType"
  if (typeof v === "boolean") return "bool"
  if (typeof v === "number") return Number.isInteger(v) ? "int" : "float"
  if (typeof v === "string") return "str"
  if (Array.isArray(v)) return "list"
  return "dict"
}

const INT_LITERAL = /^\s*[+-]?\d+(?:_\d+)*\s*$/

/** Python `int(v)`. */
export const pyInt = (v: unknown): number => {
  if (typeof v === "boolean") return v ? 1 : 0
  if (typeof v === "number") {
    if (Number.isNaN(v)) throw new PyError("ValueError", "cannot convert float NaN to integer")
    if (!Number.isFinite(v)) throw new PyError("OverflowError", "cannot convert float infinity to integer")
    return Math.trunc(v)
  }
  if (typeof v === "string") {
    if (!INT_LITERAL.test(v)) throw new PyError("ValueError", `invalid literal for int() with base 10: ${pyRepr(v)}`)
    return Number(v.replace(/_/g, "").trim())
  }
  throw new PyError(
    "TypeError",
    `int() argument must be a string, a bytes-like object or a real number, not '${typeName(v)}'`
  )
}

const FLOAT_LITERAL = /^\s*[+-]?(?:(?:\d+(?:_\d+)*)?\.?\d*(?:_\d+)*(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)\s*$/i

/** Python `float(v)`. */
export const pyFloatOf = (v: unknown): number => {
  if (typeof v === "boolean") return v ? 1 : 0
  if (typeof v === "number") return v
  if (typeof v === "string") {
    const t = v.trim().replace(/_/g, "")
    if (t === "" || t === "." || !FLOAT_LITERAL.test(v)) {
      throw new PyError("ValueError", `could not convert string to float: ${pyRepr(v)}`)
    }
    const lower = t.toLowerCase().replace(/^\+/, "")
    if (lower === "inf" || lower === "infinity") return Infinity
    if (lower === "-inf" || lower === "-infinity") return -Infinity
    if (lower.endsWith("nan")) return NaN
    return Number(t)
  }
  throw new PyError("TypeError", `float() argument must be a string or a real number, not '${typeName(v)}'`)
}

/** Python truthiness (`bool(v)`): note that the string "false" is true. */
export const pyBool = (v: unknown): boolean => {
  if (v === null || v === undefined || v === false || v === 0 || v === "") return false
  if (Array.isArray(v)) return v.length > 0
  if (typeof v === "object") return Object.keys(v).length > 0
  return true
}
