/** Byte counts as messages name them. */

const MiB = 1024 * 1024
const GiB = 1024 * MiB

/**
 * A limit as a person reads it: whole GB or MB (2^30 and 2^20 bytes: the contract's "50MB" is
 * 50 MiB), one decimal above a MB, else bytes.
 */
export const sizeText = (bytes: number): string => {
  if (bytes >= GiB && bytes % GiB === 0) return `${bytes / GiB} GB`
  if (bytes >= MiB && bytes % MiB === 0) return `${bytes / MiB} MB`
  if (bytes >= MiB) return `${(bytes / MiB).toFixed(1)} MB`
  return `${bytes} bytes`
}
