/** One line of the results table: metric, WES, peer, ratio, target, and whether it is met. */
export interface Row {
  readonly bench: string
  readonly metric: string
  readonly wes: string
  readonly peer: string
  readonly ratio: string
  readonly target: string
  readonly met: "yes" | "no" | "n/a"
}

export const fmt = (n: number, digits = 0): string =>
  Number.isFinite(n) ? n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits }) : "n/a"

export const ratio = (wes: number, peer: number, digits = 2): string =>
  Number.isFinite(wes) && Number.isFinite(peer) && peer !== 0 ? `${fmt(wes / peer, digits)}x` : "n/a"

export const verdict = (ok: boolean | undefined): Row["met"] => (ok === undefined ? "n/a" : ok ? "yes" : "no")

/** The table as Markdown. */
export const markdown = (rows: ReadonlyArray<Row>): string => {
  const header = "| bench | metric | WES | peer | ratio | target | met |\n|---|---|---|---|---|---|---|"
  return [header, ...rows.map((r) => `| ${r.bench} | ${r.metric} | ${r.wes} | ${r.peer} | ${r.ratio} | ${r.target} | ${r.met} |`)].join("\n")
}
