/**
 * Markdown tables whose last column, Notes, is written by hand: regenerating a table keeps the
 * notes of each row (by its table's first header and its key), so only the other columns follow
 * the OpenAPI document.
 */
export type Notes = ReadonlyMap<string, string>

const cells = (row: string): ReadonlyArray<string> =>
  row.trim().replace(/^\|/, "").replace(/(?<!\\)\|$/, "").split(/(?<!\\)\|/).map((c) => c.trim())

/** The notes of every table row in `text`, keyed `<first header>:<first cell>`. */
export const notesIn = (text: string): Notes => {
  const notes = new Map<string, string>()
  let header: string | undefined
  for (const line of text.split("\n")) {
    if (!line.startsWith("|")) {
      header = undefined
      continue
    }
    const row = cells(line)
    if (header === undefined) header = row[0]
    else if (!/^-+$/.test(row[0] ?? "")) notes.set(`${header}:${row[0]}`, row[row.length - 1] ?? "")
  }
  return notes
}

const escape = (cell: string): string => cell.replace(/(?<!\\)\|/g, "\\|").replace(/\n/g, " ")

/**
 * A table with `headers` (the last one is Notes) and `rows` (every cell but the notes); each row's
 * notes are the ones `notes` has for it, else `fallback` (for a row new to the page).
 */
export const table = (
  headers: ReadonlyArray<string>,
  rows: ReadonlyArray<{ readonly cells: ReadonlyArray<string>; readonly fallback: string | undefined }>,
  notes: Notes
): string => {
  const lines = [`| ${headers.join(" | ")} |`, `|${headers.map(() => "---").join("|")}|`]
  for (const row of rows) {
    const note = notes.get(`${headers[0]}:${row.cells[0]}`) ?? escape(row.fallback ?? "")
    lines.push(`| ${[...row.cells.map(escape), note].join(" | ")} |`.replace(/\| {2}(?=\|)/g, "| "))
  }
  return lines.join("\n")
}
