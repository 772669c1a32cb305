/** Templates, runners, managed runners and accounts in memory. */
import {
  AccountRepository,
  type ApiToken,
  LimitReached,
  type ManagedRunner,
  ManagedRunnerNotFound,
  ManagedRunnerRepository,
  pageBounds,
  paginate,
  type Runner,
  type RunnerComfyUI,
  RunnerNotFound,
  type RunnerRef,
  RunnerRepository,
  type Template,
  TemplateNotFound,
  TemplateRepository,
  toTemplateListItem,
  type User,
  UserNotFound
} from "@wes/core"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { IndexByOwner, NewestFirst, pageOf } from "./NewestFirst.js"

interface Dated {
  readonly id: string
  readonly created_at: DateTime.Utc
}

/** Newest first; ties: larger id first (as the other stores list). */
const newestFirst = (a: Dated, b: Dated): number =>
  DateTime.toEpochMillis(b.created_at) - DateTime.toEpochMillis(a.created_at) || (a.id < b.id ? 1 : -1)

/** Writes `changes` to the record `id` of `byId` and answers it as stored; `notFound` when there is none. */
const updateIn = <A, E>(byId: Map<string, A>, id: string, changes: Partial<A>, notFound: () => E): Effect.Effect<A, E> => {
  const current = byId.get(id)
  if (current === undefined) return Effect.fail(notFound())
  const next = { ...current, ...changes }
  byId.set(id, next)
  return Effect.succeed(next)
}

/** Records owned by users, with a newest-first index per owner. */
class Owned<A extends Dated & { readonly user_id: string }> {
  readonly byId = new Map<string, A>()
  readonly byUser = new IndexByOwner()

  insert(a: A, limit: number | undefined, name: "templates" | "runners"): Effect.Effect<A, LimitReached> {
    if (limit !== undefined && this.count(a.user_id) + 1 > limit) return Effect.fail(new LimitReached({ limit: name }))
    this.byId.set(a.id, a)
    this.byUser.of(a.user_id).add(a.id, a.created_at)
    return Effect.succeed(a)
  }
  find(userId: string, id: string): Option.Option<A> {
    return Option.filter(Option.fromNullishOr(this.byId.get(id)), (a) => a.user_id === userId)
  }
  update<E>(userId: string, id: string, changes: Partial<A>, notFound: () => E): Effect.Effect<A, E> {
    return Option.isSome(this.find(userId, id)) ? updateIn(this.byId, id, changes, notFound) : Effect.fail(notFound())
  }
  delete(userId: string, id: string): boolean {
    if (Option.isNone(this.find(userId, id))) return false
    this.byId.delete(id)
    this.byUser.of(userId).remove(id)
    return true
  }
  count(userId: string): number {
    return this.byUser.peek(userId)?.size ?? 0
  }
  newest(userId: string): Array<A> {
    const index = this.byUser.peek(userId)
    return index === undefined ? [] : Array.from(index.newest(), (id) => this.byId.get(id)!)
  }
}

export const makeMemoryTemplateRepository = () => {
  const store = new Owned<Template>()
  return TemplateRepository.of({
    insert: (t, limit) => Effect.suspend(() => store.insert(t, limit, "templates")),
    findForUser: (userId, id) => Effect.sync(() => store.find(userId, id)),
    update: (userId, id, changes) => Effect.suspend(() => store.update(userId, id, changes, () => new TemplateNotFound())),
    delete: (userId, id) => Effect.sync(() => store.delete(userId, id)),
    list: (userId, page) =>
      Effect.sync(() => {
        const { end, start } = pageBounds(page)
        const result = pageOf(store.newest(userId), () => true, start, end - start)
        return { items: result.items.map(toTemplateListItem), total: result.total }
      }),
    count: (userId) => Effect.sync(() => store.count(userId))
  })
}

/** A runner's ComfyUI, as probed; false when the runner is gone. */
const setComfyUI = <R extends { readonly comfyui: RunnerComfyUI | null }>(byId: Map<string, R>, id: string, comfyui: RunnerComfyUI): boolean => {
  const current = byId.get(id)
  if (current === undefined) return false
  byId.set(id, { ...current, comfyui })
  return true
}

/** Active runners of either kind, for the capability store's `due` (not part of core's interfaces). */
export interface ActiveRunners {
  readonly activeRefs: () => ReadonlyArray<RunnerRef>
}

export const makeMemoryRunnerRepository = (): RunnerRepository["Service"] & ActiveRunners & { readonly exists: (id: string) => boolean } => {
  const store = new Owned<Runner>()
  const activeRefs = () =>
    Array.from(store.byId.values()).filter((r) => r.status === "active").map((r): RunnerRef => ({ kind: "user", id: r.id }))
  return Object.assign(RunnerRepository.of({
    insert: (r, limit) => Effect.suspend(() => store.insert(r, limit, "runners")),
    findById: (id) => Effect.sync(() => Option.fromNullishOr(store.byId.get(id))),
    findForUser: (userId, id) => Effect.sync(() => store.find(userId, id)),
    update: (userId, id, changes) => Effect.suspend(() => store.update(userId, id, changes, () => new RunnerNotFound())),
    delete: (userId, id) => Effect.sync(() => store.delete(userId, id)),
    setComfyUI: (id, comfyui) => Effect.sync(() => setComfyUI(store.byId, id, comfyui)),
    list: (userId, query) =>
      Effect.sync(() => {
        const { end, start } = pageBounds(query)
        return pageOf(store.newest(userId), (r) => query.status === undefined || r.status === query.status, start, end - start)
      }),
    count: (userId) => Effect.sync(() => store.count(userId)),
    listActiveForUser: (userId) => Effect.sync(() => store.newest(userId).filter((r) => r.status === "active"))
  }), { activeRefs, exists: (id: string) => store.byId.has(id) })
}

export const makeMemoryManagedRunnerRepository = (): ManagedRunnerRepository["Service"] & ActiveRunners => {
  const byId = new Map<string, ManagedRunner>()
  const index = new NewestFirst()
  const newest = () => Array.from(index.newest(), (id) => byId.get(id)!)
  const activeRefs = () =>
    Array.from(byId.values()).filter((r) => r.status === "active").map((r): RunnerRef => ({ kind: "managed", id: r.id }))
  return Object.assign(ManagedRunnerRepository.of({
    insert: (r) =>
      Effect.sync(() => {
        byId.set(r.id, r)
        index.add(r.id, r.created_at)
        return r
      }),
    findById: (id) => Effect.sync(() => Option.fromNullishOr(byId.get(id))),
    update: (id, changes) => Effect.suspend(() => updateIn(byId, id, changes, () => new ManagedRunnerNotFound())),
    setComfyUI: (id, comfyui) => Effect.sync(() => setComfyUI(byId, id, comfyui)),
    delete: (id) =>
      Effect.sync(() => {
        if (!byId.delete(id)) return false
        index.remove(id)
        return true
      }),
    list: (query) =>
      Effect.sync(() => {
        const { end, start } = pageBounds(query)
        return pageOf(
          newest(),
          (r) =>
            (query.status === undefined || r.status === query.status) &&
            (query.types === undefined || query.types.includes(r.runner_type)),
          start,
          end - start
        )
      }),
    listActive: (types) => Effect.sync(() => newest().filter((r) => r.status === "active" && types.includes(r.runner_type)))
  }), { activeRefs })
}

export const makeMemoryAccountRepository = () => {
  const users = new Map<string, User>()
  const tokens = new Map<string, ApiToken>()
  const byHash = new Map<string, string>()
  return Object.assign(AccountRepository.of({
    insertUser: (u) =>
      Effect.sync(() => {
        users.set(u.id, u)
        return u
      }),
    findUser: (id) => Effect.sync(() => Option.fromNullishOr(users.get(id))),
    listUsers: (query) =>
      Effect.sync(() => {
        const matching = Array.from(users.values())
          .filter((u) => query.tier === undefined || u.tier === query.tier)
          .sort(newestFirst)
        return paginate(matching, query)
      }),
    updateUser: (id, changes) => Effect.suspend(() => updateIn(users, id, changes, () => new UserNotFound())),
    insertToken: (t) =>
      Effect.sync(() => {
        tokens.set(t.id, t)
        byHash.set(t.token_hash, t.id)
        return t
      }),
    findTokenByHash: (hash) =>
      Effect.sync(() => {
        const token = tokens.get(byHash.get(hash) ?? "")
        const user = token === undefined ? undefined : users.get(token.user_id)
        return token === undefined || user === undefined ? Option.none() : Option.some({ token, user })
      }),
    findToken: (id) => Effect.sync(() => Option.fromNullishOr(tokens.get(id))),
    listTokens: (userId) =>
      Effect.sync(() =>
        Array.from(tokens.values())
          .filter((t) => t.user_id === userId)
          .sort(newestFirst)
      ),
    deleteToken: (id) =>
      Effect.sync(() => {
        const token = tokens.get(id)
        if (token === undefined) return false
        tokens.delete(id)
        byHash.delete(token.token_hash)
        return true
      }),
    recordTokenUse: (uses) =>
      Effect.sync(() => {
        for (const { at, id } of uses) {
          const token = tokens.get(id)
          if (token === undefined) continue
          if (token.last_used_at === null || DateTime.isGreaterThan(at, token.last_used_at)) {
            tokens.set(id, { ...token, last_used_at: at })
          }
        }
      })
  }), {
    /** A user's tier, read synchronously (the retention sweeper's claims). */
    tierOf: (userId: string) => users.get(userId)?.tier
  })
}

export const MemoryTemplateRepository = Layer.sync(TemplateRepository, makeMemoryTemplateRepository)
export const MemoryRunnerRepository = Layer.sync(RunnerRepository, makeMemoryRunnerRepository)
export const MemoryManagedRunnerRepository = Layer.sync(ManagedRunnerRepository, makeMemoryManagedRunnerRepository)
export const MemoryAccountRepository = Layer.sync(AccountRepository, makeMemoryAccountRepository)
