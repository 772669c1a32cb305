/** The headings of a Markdown page, with the anchors GitHub gives them, outside code blocks. */
export interface Heading {
  readonly level: number
  readonly text: string
  readonly anchor: string
  /** Offset of the heading's line in the page. */
  readonly at: number
}

const slug = (text: string): string =>
  text.toLowerCase().replace(/[^\p{L}\p{N}\- _]/gu, "").replace(/ /g, "-")

export const headings = (page: string): ReadonlyArray<Heading> => {
  const out: Array<Heading> = []
  const seen = new Map<string, number>()
  let fenced = false
  let at = 0
  for (const line of page.split("\n")) {
    if (line.startsWith("```")) fenced = !fenced
    const match = fenced ? null : /^(#{1,6}) (.+)$/.exec(line)
    if (match !== null) {
      const base = slug(match[2]!)
      const n = seen.get(base) ?? 0
      seen.set(base, n + 1)
      out.push({ level: match[1]!.length, text: match[2]!, anchor: n === 0 ? base : `${base}-${n}`, at })
    }
    at += line.length + 1
  }
  return out
}

/** The heading `offset` is under (the last one before it). */
export const headingBefore = (all: ReadonlyArray<Heading>, offset: number): Heading | undefined =>
  all.filter((h) => h.at < offset).pop()

/** Where the section of `h` ends: the next heading of its level or above, or the page's end. */
export const sectionEnd = (all: ReadonlyArray<Heading>, h: Heading, pageLength: number): number =>
  all.find((o) => o.at > h.at && o.level <= h.level)?.at ?? pageLength

/** The in-page links (`](#anchor)`) of `page` that lead to no heading. */
export const missingAnchors = (page: string): ReadonlyArray<string> => {
  const have = new Set(headings(page).map((h) => h.anchor))
  return [...new Set([...page.matchAll(/\]\(#([^)\s]+)\)/g)].map((m) => m[1]!))].filter((a) => !have.has(a))
}
