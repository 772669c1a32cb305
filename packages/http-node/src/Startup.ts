/**
 * How `wes serve` reads its environment and reports a start that failed: an empty variable is
 * unset, and every configuration or start-up failure is one JSON log line naming the variable or
 * resource and the fix (plus one readable line when stderr is a terminal), then a non-zero exit.
 */
import * as Cause from "effect/Cause"
import * as ConfigError from "effect/ConfigError"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Option from "effect/Option"

/** The environment without empty variables: `WES_DEV=` means "unset", not "invalid". */
export const environmentProvider = (env: NodeJS.ProcessEnv = process.env): ConfigProvider.ConfigProvider =>
  ConfigProvider.fromMap(new Map(Object.entries(env).flatMap(([k, v]) => (v === undefined || v.trim() === "" ? [] : [[k, v] as const]))))

export interface StartupFailure {
  readonly msg: string
  /** The variable to change, when one is to blame. */
  readonly variable?: string | undefined
  readonly fix: string
}

/** A long or multi-line message (a schema's tree) as one short line. */
const oneLine = (message: string): string => {
  const lines = message.split("\n").map((l) => l.replace(/^[\s└├─│]+/, "").trim()).filter((l) => l !== "")
  // A schema's tree: its last line is the reason; the first spells out the schema.
  const text = lines[lines.length - 1] ?? ""
  return text.length > 300 ? `${text.slice(0, 297)}...` : text
}

/** The first leaf of a ConfigError (an And/Or tree of at most a few levels). */
const configLeaf = (e: ConfigError.ConfigError): { readonly path: ReadonlyArray<string>; readonly message: string } => {
  let current: ConfigError.ConfigError = e
  for (let i = 0; i < 32; i++) {
    if (current._op === "And" || current._op === "Or") current = current.left
    else return { path: current.path, message: current.message }
  }
  return { path: [], message: String(e) }
}

/** Errors nested through `cause` (bounded: a chain, not user input). */
const chain = (u: unknown): ReadonlyArray<unknown> => {
  const out: Array<unknown> = []
  let current = u
  for (let i = 0; i < 10 && current !== undefined && current !== null; i++) {
    out.push(current)
    current = typeof current === "object" && "cause" in current ? (current as { cause: unknown }).cause : undefined
  }
  return out
}

const codeOf = (u: unknown): string | undefined =>
  typeof u === "object" && u !== null && "code" in u && typeof u.code === "string" ? u.code : undefined

const messageOf = (u: unknown): string =>
  typeof u === "object" && u !== null && "message" in u && typeof u.message === "string" && u.message !== "" ? u.message : String(u)

/** What went wrong at start, in words an operator can act on. */
export const describeStartupFailure = (
  cause: Cause.Cause<unknown>,
  context: { readonly port: number | undefined; readonly storage: string | undefined }
): StartupFailure => {
  const error = Option.getOrElse(Cause.failureOption(cause), () => Cause.squash(cause))
  if (ConfigError.isConfigError(error)) {
    const leaf = configLeaf(error)
    // A validation's error carries no path; its message names the variable.
    const variable = leaf.path.join("_") || /\b(WES_[A-Z_]+|DATABASE_URL)\b/.exec(leaf.message)?.[1]
    return {
      msg: `invalid configuration${variable === undefined ? "" : ` (${variable})`}: ${oneLine(leaf.message)}`,
      variable,
      fix: `${variable === undefined ? "fix the variable" : `set ${variable} to an accepted value, or unset it`} (wes serve --help lists the variables)`
    }
  }
  const errors = chain(error)
  const code = errors.map(codeOf).find((c) => c !== undefined)
  if (code === "EADDRINUSE" || code === "EACCES" || code === "EADDRNOTAVAIL") {
    const what = code === "EADDRINUSE" ? "is already in use" : code === "EACCES" ? "may not be opened by this user" : "is not an address of this machine"
    return {
      msg: `cannot listen: port ${context.port ?? "?"} ${what} (${code})`,
      variable: code === "EADDRNOTAVAIL" ? "WES_HOST" : "WES_PORT",
      fix: code === "EADDRNOTAVAIL" ? "set WES_HOST to an address of this machine (0.0.0.0 for all)" : "stop the other process or set WES_PORT to a free port"
    }
  }
  if (context.storage === "postgres") {
    const reason = oneLine(messageOf(errors[errors.length - 1]))
    return {
      msg: `cannot use the PostgreSQL store: ${reason}`,
      variable: "DATABASE_URL",
      fix: "check DATABASE_URL (postgres://user:password@host:5432/database), that the server accepts connections and that the database exists"
    }
  }
  return { msg: `cannot start: ${oneLine(messageOf(errors[errors.length - 1]))}`, fix: "see the error above; wes serve --help lists the configuration" }
}

/** Reports a failed start: one JSON line on stdout (with the logs), one readable line on a terminal. */
export const reportStartupFailure = (failure: StartupFailure): void => {
  process.stdout.write(JSON.stringify({ time: new Date().toISOString(), level: "fatal", msg: failure.msg, variable: failure.variable, fix: failure.fix }) + "\n")
  if (process.stderr.isTTY) process.stderr.write(`wes serve: ${failure.msg}; ${failure.fix}\n`)
}
