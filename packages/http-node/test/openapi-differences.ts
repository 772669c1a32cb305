/**
 * Where the served OpenAPI document may differ from test/golden/openapi.json: only what Effect 4
 * writes differently and cannot be told not to. Each difference is a named rule that rewrites the
 * golden document the way Effect 4 writes it, with why no client is affected. golden.test.ts
 * applies every rule to the golden document, then compares byte for byte: a rule that changes
 * nothing (stale) fails, and so does any difference no rule explains (new).
 */

export type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }

export interface Difference {
  readonly name: string
  /** Why a client (a reader of the document, a generated client, a caller of the API) is unaffected. */
  readonly why: string
  /** The document as Effect 4 writes it in this respect (a new document; the argument is left as is). */
  readonly apply: (document: Json) => Json
}

export const acceptedDifferences: ReadonlyArray<Difference> = []
