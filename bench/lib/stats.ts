/** Percentiles and summaries of measurements. */
export interface Summary {
  readonly n: number
  readonly mean: number
  readonly p50: number
  readonly p99: number
  readonly max: number
}

const at = (sorted: ReadonlyArray<number>, p: number): number =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!

export const summarize = (values: ReadonlyArray<number>): Summary => {
  const sorted = values.slice().sort((a, b) => a - b)
  const mean = sorted.reduce((s, v) => s + v, 0) / Math.max(1, sorted.length)
  return { n: sorted.length, mean, p50: at(sorted, 50), p99: at(sorted, 99), max: sorted[sorted.length - 1] ?? Number.NaN }
}

export const mean = (values: ReadonlyArray<number>): number => values.reduce((s, v) => s + v, 0) / Math.max(1, values.length)
