/**
 * How `wes serve` reads its environment and reports a start that failed: an empty variable is
 * unset, and every configuration or start-up failure is one JSON log line naming the variable or
 * resource and the fix (plus one readable line when stderr is a terminal), then a non-zero exit.
 */
import * as Cause from "effect/Cause"
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"

/** The environment without empty variables: `WES_DEV=` (or blanks) means "unset", not "invalid". */
export const environmentProvider = (env: NodeJS.ProcessEnv = process.env): ConfigProvider.ConfigProvider =>
  ConfigProvider.fromEnvRecord(Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v.trim() !== "")))

/** A configuration error naming `variable`, with `message` as its reason. */
export const invalidConfig = (variable: string, message: string): Config.ConfigError =>
  new Config.ConfigError(new Schema.SchemaError(new SchemaIssue.Pointer([variable], new SchemaIssue.InvalidValue({ message }))))

/** A configuration error for a variable that must be set. */
export const missingConfig = (variable: string, message: string): Config.ConfigError =>
  new Config.ConfigError(new Schema.SchemaError(new SchemaIssue.Pointer([variable], new SchemaIssue.MissingKey({ messageMissingKey: message }))))

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

const issuesOf = SchemaIssue.makeFormatterStandardSchemaV1()

/** The first reason of a ConfigError: the provider's failure, or the schema's first issue with its path. */
const configLeaf = (e: Config.ConfigError): { readonly path: ReadonlyArray<string>; readonly message: string } => {
  if (!Schema.isSchemaError(e.cause)) return { path: [], message: e.cause.message }
  const [first] = issuesOf(e.cause.issue).issues
  if (first === undefined) return { path: [], message: e.cause.message }
  const path = (first.path ?? []).map((segment) => String(typeof segment === "object" ? segment.key : segment))
  return { path, message: first.message }
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
  const error = Option.getOrElse(Cause.findErrorOption(cause), () => Cause.squash(cause))
  if (error instanceof Config.ConfigError) {
    const leaf = configLeaf(error)
    // An error without a path (a provider's): its message may name the variable.
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
  // The S3 blob store's check at start (its message names the bucket and what answered).
  const s3 = errors.find((e) => messageOf(e).startsWith("S3 store"))
  if (s3 !== undefined) {
    return {
      msg: `cannot use the S3 blob store: ${oneLine(messageOf(s3))}`,
      variable: "WES_BLOB_STORE",
      fix: "check WES_BLOB_STORE (s3://bucket/prefix), AWS_REGION, the credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), AWS_ENDPOINT_URL_S3 and WES_S3_PATH_STYLE"
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
