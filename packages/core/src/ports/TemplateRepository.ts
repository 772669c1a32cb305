/** Storage of templates; every method is scoped to one user. */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { StorageError, TemplateNotFound } from "../domain/Errors.js"
import type { LimitReached } from "../domain/LimitReached.js"
import type { PageRequest, Paged } from "../domain/Pagination.js"
import type { Template, TemplateListItem } from "../domain/Template.js"
import type { Changes } from "./Changes.js"

/** What an edit of a template may write. */
export type TemplateChanges = Changes<Template, "name" | "description" | "body" | "models">

export class TemplateRepository extends Context.Service<TemplateRepository, {
  /** Stores a template unless the user already has `limit` templates. */
  readonly insert: (template: Template, limit?: number) => Effect.Effect<Template, LimitReached | StorageError>
  readonly findForUser: (userId: string, id: string) => Effect.Effect<Option.Option<Template>, StorageError>
  /** Writes `changes` to the user's template (Changes.ts) and answers it as stored now. */
  readonly update: (userId: string, id: string, changes: TemplateChanges) => Effect.Effect<Template, TemplateNotFound | StorageError>
  /** Removes the user's template; false when there was none. */
  readonly delete: (userId: string, id: string) => Effect.Effect<boolean, StorageError>
  /** The user's templates without bodies, newest first. */
  readonly list: (userId: string, page: PageRequest) => Effect.Effect<Paged<TemplateListItem>, StorageError>
  readonly count: (userId: string) => Effect.Effect<number, StorageError>
}>()("@wes/core/TemplateRepository") {}
