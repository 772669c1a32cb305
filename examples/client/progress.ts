/**
 * Server-sent events, parsed from the subscribe response's body as it arrives (an event stream
 * never ends while the workflow runs), and a terminal progress bar fed by them.
 */
import * as Stream from "effect/Stream"

/** One event of `GET /v1/workflow/{id}/subscribe`. */
export interface SseEvent {
  /** The workflow's event sequence number: send it back as `Last-Event-ID` to resume. */
  readonly id: string | undefined
  /** `status`, `queue`, `progress`, `executing`, `output` or `done`. */
  readonly event: string
  readonly data: unknown
}

/** Parses one SSE block (`id:`, `event:`, `data:` lines); comments (`: keep-alive`) give nothing. */
export const parseSseBlock = (block: string): SseEvent | undefined => {
  let id: string | undefined
  let event = "message"
  const data: Array<string> = []
  for (const line of block.split(/\r?\n/)) {
    if (line === "" || line.startsWith(":")) continue
    const colon = line.indexOf(":")
    const field = colon === -1 ? line : line.slice(0, colon)
    const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "")
    if (field === "id") id = value
    else if (field === "event") event = value
    else if (field === "data") data.push(value)
  }
  if (data.length === 0) return undefined
  const text = data.join("\n")
  let parsed: unknown = text
  try {
    parsed = JSON.parse(text)
  } catch {
    // not JSON: keep the text
  }
  return { id, event, data: parsed }
}

/** A response body of `text/event-stream` as events. */
export const sseEvents = <E, R>(body: Stream.Stream<Uint8Array, E, R>): Stream.Stream<SseEvent, E, R> =>
  body.pipe(
    Stream.decodeText(),
    // The unfinished tail of the text is kept for the next chunk.
    Stream.mapAccum(() => "", (buffer, text: string) => {
      const blocks = (buffer + text).split(/\r?\n\r?\n/)
      const rest = blocks.pop() ?? ""
      return [rest, blocks.flatMap((block) => parseSseBlock(block) ?? [])] as const
    })
  )

/** Where the bar is drawn: a TTY redraws one line, anything else gets a line per change. */
export interface Terminal {
  readonly isTTY?: boolean | undefined
  readonly write: (text: string) => unknown
}

const WIDTH = 30

/**
 * Progress of one workflow from its events. WES puts the overall `percent` on `executing` and
 * `progress` events (nodes finished out of the nodes to run, cached ones left out, refined by the
 * running node's steps); a server without it gets an estimate from nodes started out of the
 * workflow's nodes plus the `value / max` steps of the node running now.
 */
export class ProgressBar {
  private readonly started = new Set<string>()
  private step = 0
  /** The server's overall percent, once an event carried one. */
  private percent: number | undefined
  private status = "accepted"
  private node: string | undefined
  private outputs = 0
  private lastLine = ""

  constructor(private readonly nodes: number, private readonly terminal: Terminal) {}

  get fraction(): number {
    if (this.status === "completed") return 1
    if (this.percent !== undefined) return Math.min(1, this.percent / 100)
    const done = Math.max(0, this.started.size - 1) + this.step
    return Math.min(1, done / Math.max(1, this.nodes))
  }

  update(event: SseEvent): void {
    const data = (typeof event.data === "object" && event.data !== null ? event.data : {}) as Record<string, unknown>
    if ((event.event === "executing" || event.event === "progress") && typeof data["percent"] === "number") this.percent = data["percent"]
    switch (event.event) {
      case "status":
      case "done":
        if (typeof data["status"] === "string") this.status = data["status"]
        break
      case "executing":
        if (typeof data["node"] === "string") {
          this.node = data["node"]
          this.started.add(data["node"])
          this.step = 0
        }
        break
      case "progress":
        if (typeof data["value"] === "number" && typeof data["max"] === "number" && data["max"] > 0) {
          this.step = data["value"] / data["max"]
        }
        break
      case "output":
        this.outputs++
        break
    }
    this.draw(event.event === "done")
  }

  private draw(final: boolean): void {
    const filled = Math.round(this.fraction * WIDTH)
    const percent = `${Math.round(this.fraction * 100)}%`.padStart(4)
    const where = this.node === undefined || final ? "" : ` · node ${this.node}`
    const line = `[${"#".repeat(filled)}${".".repeat(WIDTH - filled)}] ${percent} ${this.status}${where} · ${this.outputs} output(s)`
    if (line === this.lastLine && !final) return
    this.lastLine = line
    if (this.terminal.isTTY === true) this.terminal.write(`\r\x1b[2K${line}${final ? "\n" : ""}`)
    else this.terminal.write(`${line}\n`)
  }
}
