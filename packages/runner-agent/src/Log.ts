/**
 * The agent's log: one line per event on stderr (`<time> <level> <message>`), readable in a
 * terminal and in journald alike. Tests pass their own to assert what an operator would read.
 */
export type LogLevel = "info" | "warn" | "error"

export type AgentLog = (level: LogLevel, message: string) => void

export const stderrLog: AgentLog = (level, message) => {
  process.stderr.write(`${new Date().toISOString()} ${level} ${message}\n`)
}

/** An error's message, for a log line. */
export const describe = (e: unknown): string => (e instanceof Error ? e.message : String(e))
