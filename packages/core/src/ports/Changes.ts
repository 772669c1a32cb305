/**
 * What an edit of a stored record writes: the fields it changes (an absent field keeps its stored
 * value) and when it was made. A store writes these in one guarded statement and answers the
 * record as stored after it, so concurrent edits of different fields all survive.
 */
export type Changes<A extends { readonly updated_at: unknown }, K extends keyof A> =
  & { readonly [P in K]?: A[P] }
  & Pick<A, "updated_at">

/**
 * The changes an edit made `at` makes to `current`: the fields of `wanted` whose values differ
 * from the ones read (compared as JSON), so a field sent as it was is not written.
 */
export const changesOf = <A extends { readonly updated_at: unknown }, K extends keyof A>(
  current: A,
  wanted: { readonly [P in K]?: A[P] },
  at: A["updated_at"]
): Changes<A, K> => {
  const changed = Object.entries(wanted).filter(([field, value]: [string, unknown]) =>
    JSON.stringify(value) !== JSON.stringify(current[field as keyof A])
  )
  return { ...Object.fromEntries(changed), updated_at: at } as Changes<A, K>
}
