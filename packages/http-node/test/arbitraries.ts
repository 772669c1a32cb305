/**
 * Small generators the property tests share, on `effect/Arbitrary` (Effect 4 ships no fast-check:
 * there is no weighted `oneof`, so a branch is picked with an integer).
 */
import * as Arbitrary from "effect/Arbitrary"
import * as Schema from "effect/Schema"

/** An integer from `minimum` to `maximum`, both included. */
export const integer = (minimum: number, maximum: number): Arbitrary.Arbitrary<number> =>
  Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum, maximum })))

/** One of `choices`, each as likely as its weight says. */
export const weighted = <A>(...choices: ReadonlyArray<readonly [weight: number, arbitrary: Arbitrary.Arbitrary<A>]>): Arbitrary.Arbitrary<A> => {
  const total = choices.reduce((sum, [weight]) => sum + weight, 0)
  return Arbitrary.flatMap(integer(0, total - 1), (n) => {
    let rest = n
    for (const [weight, arbitrary] of choices) {
      if (rest < weight) return arbitrary
      rest -= weight
    }
    return choices[choices.length - 1]![1]
  })
}
