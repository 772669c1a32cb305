/** Pagination of list operations: `page` (from 1) and `per_page` (1-100, default 10). */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { ValidationError } from "./Errors.js"

export const DEFAULT_PER_PAGE = 10
export const MAX_PER_PAGE = 100

export const Page = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1, { message: "must be an integer of at least 1" }))
export const PerPage = Schema.Int.check(
  Schema.isBetween({ minimum: 1, maximum: MAX_PER_PAGE }, { message: `must be an integer from 1 to ${MAX_PER_PAGE}` })
)

/** A validated page request. */
export interface PageRequest {
  readonly page: number
  readonly per_page: number
}

export const defaultPage: PageRequest = { page: 1, per_page: DEFAULT_PER_PAGE }

/** A page request as received: either bound may be absent (then its default applies). */
export interface PageInput {
  readonly page?: number | undefined
  readonly per_page?: number | undefined
}

/** One page of results and the count across all pages. */
export interface Paged<A> {
  readonly items: ReadonlyArray<A>
  readonly total: number
}

/** Index range of a page in a list of `total` items. */
export const pageBounds = (p: PageRequest): { readonly start: number; readonly end: number } => {
  const start = (p.page - 1) * p.per_page
  return { start, end: start + p.per_page }
}

/** The page of `items` (already in order) that `p` asks for. */
export const paginate = <A>(items: ReadonlyArray<A>, p: PageRequest): Paged<A> => {
  const { end, start } = pageBounds(p)
  return { items: items.slice(start, end), total: items.length }
}

/** Validates `page` and `per_page` (defaults 1 and 10). */
export const pageOf = (input: PageInput): Effect.Effect<PageRequest, ValidationError> => {
  const page = input.page ?? 1
  const perPage = input.per_page ?? DEFAULT_PER_PAGE
  if (!Number.isInteger(page) || page < 1) {
    return Effect.fail(ValidationError.field("page", "must be an integer of at least 1"))
  }
  if (!Number.isInteger(perPage) || perPage < 1 || perPage > MAX_PER_PAGE) {
    return Effect.fail(ValidationError.field("per_page", `must be an integer from 1 to ${MAX_PER_PAGE}`))
  }
  return Effect.succeed({ page, per_page: perPage })
}
