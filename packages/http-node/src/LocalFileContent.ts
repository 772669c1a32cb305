/**
 * Blob content known to be bytes of a local file: a multipart part spilled to disk
 * (MultipartReader.ts) and a blob of the directory store (FsBlobStore.ts) are streamed from their
 * files, and each such stream is registered here with its file. Whoever knows where the bytes go
 * can then move them through one reused buffer instead of running the stream, which reads a fresh
 * 1 MiB buffer per chunk: a gigabyte of garbage that V8 collects only after some 64 MB of it has
 * piled up (its young backing-store trigger), the peak RSS of a large transfer. The directory
 * store copies a spilled upload's file (FsBlobStore.ts), a download sends a blob's file
 * (FileDownload.ts). Any other consumer, and a stream that was wrapped on its way, just runs it.
 */

/** Bytes `start` to `start + length` of the file at `path` (to its end without a length). */
export interface LocalFile {
  readonly path: string
  readonly start: number
  readonly length?: number | undefined
}

/** The registered streams (the key) and their files; weak, so a registration lives as long as its stream. */
const files = new WeakMap<object, LocalFile>()

/** Registers `stream` as the bytes of `file`; the same stream. */
export const fileBacked = <S extends object>(stream: S, file: LocalFile): S => {
  files.set(stream, file)
  return stream
}

/** The file `content` streams, when it is a registered stream. */
export const localFileOf = (content: unknown): LocalFile | undefined =>
  typeof content === "object" && content !== null ? files.get(content) : undefined
