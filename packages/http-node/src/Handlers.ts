/**
 * How the groups of handlers are built (WorkflowsHttp.ts and the others): with
 * `HttpApiBuilder.group`, which keeps the context a group is built in and gives it to each of its
 * requests. `seeing` builds a group seeing only the services its handlers take (once, at start)
 * and the middlewares they run behind, so a request carries itself, its caller and its scope
 * beside those few, not every service of the process.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"

/**
 * `layer`, built in a context of `keys` alone (and its scope): whatever else is in scope where it
 * is built stays out of it. Requiring a service that is not listed is a type error.
 */
export const seeing = <const Keys extends ReadonlyArray<Context.Key<unknown, unknown>>>(...keys: Keys) =>
<A, E, R extends Context.Service.Identifier<Keys[number]>>(layer: Layer.Layer<A, E, R>): Layer.Layer<A, E, R> =>
  Layer.effectContext(
    Effect.updateContext(
      Layer.build(layer),
      // `R` is among `keys`: what is picked is everything the layer needs.
      (context: Context.Context<R | Scope.Scope>) => Context.pick(...keys, Scope.Scope)(context) as Context.Context<R | Scope.Scope>
    )
  )
