/**
 * Generated regions of a Markdown page: the text between a begin and an end comment is written by a
 * generator, everything outside them by hand.
 */
export class MissingMarker extends Error {
  override readonly name = "MissingMarker"
  constructor(readonly page: string, readonly marker: string) {
    super(`${page} has no "${marker}" marker: put it back where the generated text goes`)
  }
}

/** A generated region: `<!-- begin ${name} -->` ... `<!-- end ${name} -->`. */
export interface Region {
  readonly begin: string
  readonly end: string
}

export const region = (name: string, note: string): Region => ({
  begin: `<!-- begin ${name}: ${note} -->`,
  end: `<!-- end ${name} -->`
})

const bounds = (page: string, pageName: string, r: Region): readonly [number, number] => {
  const start = page.indexOf(r.begin)
  if (start < 0) throw new MissingMarker(pageName, r.begin)
  const stop = page.indexOf(r.end, start)
  if (stop < 0) throw new MissingMarker(pageName, r.end)
  return [start + r.begin.length, stop]
}

/** The text between the region's markers. */
export const regionContent = (page: string, pageName: string, r: Region): string => {
  const [from, to] = bounds(page, pageName, r)
  return page.slice(from, to)
}

/** `page` with the text between the region's markers replaced by `content`. */
export const replaceRegion = (page: string, pageName: string, r: Region, content: string): string => {
  const [from, to] = bounds(page, pageName, r)
  return `${page.slice(0, from)}\n${content.trimEnd()}\n${page.slice(to)}`
}
