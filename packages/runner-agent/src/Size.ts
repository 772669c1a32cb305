/**
 * Byte sizes as operators write them: `200GB`, `1.5TiB`, `500 MB`, `1073741824`. Decimal units
 * (KB, MB, GB, TB = powers of 1000, as disks are sold) and binary ones (KiB, MiB, GiB, TiB);
 * a bare number is bytes. Case-insensitive; an optional space before the unit.
 */
const UNITS: Readonly<Record<string, number>> = {
  b: 1,
  kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12,
  kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30, tib: 2 ** 40
}

/** The size in whole bytes, or undefined when `text` is not a positive size. */
export const parseByteSize = (text: string): number | undefined => {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(text)
  if (match === null) return undefined
  const factor = UNITS[(match[2] ?? "").toLowerCase() || "b"]
  if (factor === undefined) return undefined
  const bytes = Math.floor(Number(match[1]) * factor)
  return Number.isSafeInteger(bytes) && bytes > 0 ? bytes : undefined
}
