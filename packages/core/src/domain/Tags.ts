/**
 * Tags route workflows to runners. A tag is trimmed, 1-50 characters, without commas or control
 * characters, and compared case-insensitively (stored lowercase). A runner matches a workflow
 * when its tags contain every workflow tag; a workflow without tags matches every runner.
 */
import * as Result from "effect/Result"
import { ValidationError } from "./Errors.js"

/** Longest accepted tag. */
export const MAX_TAG_LENGTH = 50
/** Most tags on a runner (contract) and, by the same bound, on a workflow. */
export const MAX_TAGS = 10

// eslint-disable-next-line no-control-regex
const FORBIDDEN = /[,\u0000-\u001f\u007f]/

/** Normalizes one tag, or explains why it is not a tag. */
export const normalizeTag = (raw: string): Result.Result<string, string> => {
  const tag = raw.trim()
  if (tag.length === 0) return Result.fail("tags must not be empty")
  if (tag.length > MAX_TAG_LENGTH) return Result.fail(`a tag is at most ${MAX_TAG_LENGTH} characters`)
  if (FORBIDDEN.test(tag)) return Result.fail("tags must not contain commas or control characters")
  return Result.succeed(tag.toLowerCase())
}

/**
 * Validates a list of tags: at most `MAX_TAGS` entries as sent, each a valid tag; the result is
 * lowercase with duplicates removed, in first-seen order.
 */
export const normalizeTags = (
  raw: ReadonlyArray<string>,
  field = "tags"
): Result.Result<ReadonlyArray<string>, ValidationError> => {
  if (raw.length > MAX_TAGS) {
    return Result.fail(ValidationError.field(field, `at most ${MAX_TAGS} tags are allowed (got ${raw.length})`))
  }
  const out: Array<string> = []
  for (const t of raw) {
    const n = normalizeTag(t)
    if (Result.isFailure(n)) {
      // An over-long tag is not echoed back (the message already says what is wrong with it).
      const shown = t.trim().length > MAX_TAG_LENGTH ? "" : `: ${JSON.stringify(t)}`
      return Result.fail(ValidationError.field(field, `${n.failure}${shown}`))
    }
    if (!out.includes(n.success)) out.push(n.success)
  }
  return Result.succeed(out)
}

/**
 * Parses the comma-separated `tags` form field. An absent or blank field means no tags; an empty
 * entry between commas is a format error.
 */
export const parseTagList = (
  field: string | undefined
): Result.Result<ReadonlyArray<string>, ValidationError> => {
  if (field === undefined || field.trim() === "") return Result.succeed([])
  return normalizeTags(field.split(","), "tags")
}

/** True when `runnerTags` (normalized) contain every one of `workflowTags` (normalized). */
export const tagsMatch = (runnerTags: ReadonlyArray<string>, workflowTags: ReadonlyArray<string>): boolean =>
  workflowTags.every((t) => runnerTags.includes(t))
