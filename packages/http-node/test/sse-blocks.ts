/** Server-sent events as a test reads them: the blocks of a stream, comments left out. */
export interface Block {
  readonly id?: string
  readonly event?: string
  readonly data?: string
}

/** The blocks of a stream read to its end (every field of a block, by name). */
export const blocks = (text: string): Array<Block> =>
  text.split("\n\n").filter((b) => b.trim() !== "" && !b.startsWith(":")).map((b) =>
    Object.fromEntries(b.split("\n").map((l) => [l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 1).trim()])) as Block
  )
