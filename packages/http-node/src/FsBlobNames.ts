/**
 * Where the filesystem blob store keeps a key: one of 256 shard directories, chosen by the key's
 * first two segments (`outputs/<workflow>`), so the blobs of a workflow share a shard; the file's
 * name is a hash of each of the key's prefixes (its folders) then of the key itself,
 * `<h(outputs)>-<h(outputs/w)>-<h(outputs/w/1)>-<sha256(key)>`: no key names a path outside the
 * directory, a put makes no directory, and `deletePrefix` finds a prefix's blobs by their names
 * (one shard's listing; every shard's for a one-segment prefix) without an index beside them.
 *
 * Prefix hashes are 64 bits of SHA-256 (a name of an 8-segment key stays under 200 characters):
 * two prefixes of one shard hashing alike is a chance of about 1 in 10^19 per pair.
 *
 * Blobs written before this layout are named by the key's hash alone, in the shard of its first
 * two hex digits (`legacyName`): they are still read, copied and deleted by key, but
 * `deletePrefix` does not see them.
 */
import { createHash } from "node:crypto"

export const SHARDS = 256

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex")
const prefixHash = (text: string) => sha256(text).slice(0, 16)

/** The shard (two hex digits) of the keys whose first two segments are `group`. */
const shardOf = (group: string) => sha256(group).slice(0, 2)

/** The shard and file name of a safe key. */
export const blobName = (key: string): { readonly shard: string; readonly name: string } => {
  const segments = key.split("/")
  const folders = segments.slice(0, -1).map((_, i) => prefixHash(segments.slice(0, i + 1).join("/")))
  return { shard: shardOf(segments.slice(0, 2).join("/")), name: [...folders, sha256(key)].join("-") }
}

/** Where a key lived before: named by its hash alone. */
export const legacyName = (key: string): { readonly shard: string; readonly name: string } => {
  const hash = sha256(key)
  return { shard: hash.slice(0, 2), name: hash }
}

/**
 * The files under a safe prefix (`outputs/w/`): the shards to list (one, or every shard for a
 * one-segment prefix) and the start their names share.
 */
export const prefixNames = (prefix: string): { readonly shards: ReadonlyArray<string>; readonly nameStart: string } => {
  const segments = prefix.slice(0, -1).split("/")
  const nameStart = segments.map((_, i) => `${prefixHash(segments.slice(0, i + 1).join("/"))}-`).join("")
  const shards = segments.length >= 2
    ? [shardOf(segments.slice(0, 2).join("/"))]
    : Array.from({ length: SHARDS }, (_, i) => i.toString(16).padStart(2, "0"))
  return { shards, nameStart }
}
