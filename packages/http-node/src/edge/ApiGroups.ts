/**
 * The handlers of one group of the declaration, as a layer. `group` has HttpApiBuilder.group's
 * signature, so a group's handlers are written as for HttpApiBuilder (`handlers.handle("get",
 * ({ path }) => ...)`, typed by the declaration); what the layer provides is those handlers and
 * the context they were built in, which ApiApp.ts compiles into WES's router, instead of routes
 * of @effect/platform's HttpRouter.
 */
import * as HttpApiBuilder from "effect/unstable/httpapi/HttpApiBuilder"
import type * as HttpApiEndpoint from "effect/unstable/httpapi/HttpApiEndpoint"
import type * as HttpApiGroup from "effect/unstable/httpapi/HttpApiGroup"
import * as Chunk from "effect/Chunk"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import { identity } from "effect/Function"
import * as Layer from "effect/Layer"
import { pipeArguments } from "effect/Pipeable"

/** One endpoint's handler, as `handlers.handle` recorded it. */
export interface Handler {
  readonly endpoint: HttpApiEndpoint.HttpApiEndpoint.AnyWithProps
  readonly handler: (request: Record<string, unknown>) => Effect.Effect<unknown, unknown, unknown>
  /** `handleRaw`: the body is not decoded (the handler reads the request itself). */
  readonly withFullRequest: boolean
  readonly uninterruptible: boolean
}

/** What a group's layer provides. */
export interface GroupHandlers {
  readonly handlers: ReadonlyArray<Handler>
  /** The context the group was built in: what its handlers need besides the request. */
  readonly context: Context.Context<never>
}

/** The service under which the group `name` of the API `apiId` is provided. */
export const GroupHandlersTag = (apiId: string, name: string) =>
  Context.GenericTag<GroupHandlers>(`@wes/http-node/ApiGroup/${apiId}/${name}`)

interface Builder {
  readonly group: HttpApiGroup.HttpApiGroup.AnyWithProps
  readonly handlers: Chunk.Chunk<Handler>
}

type Options = { readonly uninterruptible?: boolean | undefined } | undefined

const builder = (group: HttpApiGroup.HttpApiGroup.AnyWithProps, handlers: Chunk.Chunk<Handler>) => {
  const add = (name: string, handler: Handler["handler"], withFullRequest: boolean, options: Options) =>
    builder(group, Chunk.append(handlers, {
      endpoint: group.endpoints[name]!,
      handler,
      withFullRequest,
      uninterruptible: options?.uninterruptible ?? false
    }))
  return {
    [HttpApiBuilder.HandlersTypeId]: { _Endpoints: identity },
    group,
    handlers,
    handle: (name: string, handler: Handler["handler"], options?: Options) => add(name, handler, false, options),
    handleRaw: (name: string, handler: Handler["handler"], options?: Options) => add(name, handler, true, options),
    pipe(...args: ReadonlyArray<unknown>) {
      return pipeArguments(this, args as unknown as IArguments)
    }
  }
}

const make = (
  api: { readonly identifier: string; readonly groups: Readonly<Record<string, HttpApiGroup.HttpApiGroup.AnyWithProps>> },
  name: string,
  build: (handlers: ReturnType<typeof builder>) => Builder | Effect.Effect<Builder, unknown, unknown>
): Layer.Layer<GroupHandlers, unknown, unknown> =>
  Layer.effect(
    GroupHandlersTag(api.identifier, name),
    Effect.gen(function*() {
      const group = api.groups[name]
      if (group === undefined) return yield* Effect.dieMessage(`the API declares no group ${name}`)
      const context = yield* Effect.context<never>()
      const result = build(builder(group, Chunk.empty()))
      const built = Effect.isEffect(result) ? yield* result : result
      return { handlers: Chunk.toReadonlyArray(built.handlers), context }
    })
  )

/** A group's handlers, typed exactly as HttpApiBuilder.group types them. */
export const group: typeof HttpApiBuilder.group = make as unknown as typeof HttpApiBuilder.group
