/** Use cases of templates: personal, reusable workflow definitions. */
import * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import type { User } from "../domain/Account.js"
import { type StorageError, TemplateNotFound, type TierLimitExceeded, type ValidationError } from "../domain/Errors.js"
import { IdGenerator, isUuid, type TemplateId } from "../domain/Ids.js"
import type { JsonObject } from "../domain/Json.js"
import { pageOf, type PageInput, type Paged } from "../domain/Pagination.js"
import { CreateTemplateRequest, type Template, type TemplateListItem, UpdateTemplateRequest } from "../domain/Template.js"
import { changesOf } from "../ports/Changes.js"
import { TemplateRepository } from "../ports/TemplateRepository.js"
import { createWithinLimit } from "./WithinLimit.js"
import { TierPolicy } from "../domain/Tier.js"
import { decodeRequest } from "../domain/Validation.js"
import { validateWorkflowJson } from "../domain/WorkflowJson.js"
import { findPlaceholders } from "../domain/Placeholders.js"
import { mergeModels } from "../domain/ModelFiles.js"

/** Fields of create-template as received (the body file already parsed as JSON). */
export interface CreateTemplateInput {
  readonly name?: unknown
  readonly description?: unknown
  readonly body?: unknown
  /** The parsed JSON of the `models` field: model files every workflow made from it needs. */
  readonly models?: unknown
}

export type UpdateTemplateInput = CreateTemplateInput

/** A template body: a workflow definition whose placeholders are well formed (checked now, not at first use). */
const validateBody = (body: unknown): Effect.Effect<JsonObject, ValidationError> =>
  Effect.fromResult(Result.flatMap(validateWorkflowJson(body, "body"), (valid) => Result.map(findPlaceholders(valid, "body"), () => valid)))

export class TemplateService extends Context.Service<TemplateService, {
  readonly create: (user: User, input: CreateTemplateInput) => Effect.Effect<Template, ValidationError | TierLimitExceeded | StorageError>
  readonly get: (user: User, id: string) => Effect.Effect<Template, TemplateNotFound | StorageError>
  readonly list: (user: User, page: PageInput) => Effect.Effect<Paged<TemplateListItem>, ValidationError | StorageError>
  /** Omitted fields keep their values; workflows already created from it are not affected. */
  readonly update: (user: User, id: string, input: UpdateTemplateInput) => Effect.Effect<Template, ValidationError | TemplateNotFound | StorageError>
  readonly delete: (user: User, id: string) => Effect.Effect<void, TemplateNotFound | StorageError>
}>()("@wes/core/TemplateService") {
  static Live: Layer.Layer<TemplateService, never, TemplateRepository | TierPolicy | IdGenerator> = Layer.effect(
    TemplateService,
    Effect.gen(function*() {
      const repo = yield* TemplateRepository
      const policy = yield* TierPolicy
      const ids = yield* IdGenerator
      const decodeCreate = decodeRequest(CreateTemplateRequest)
      const decodeUpdate = decodeRequest(UpdateTemplateRequest)
      const defined = (input: CreateTemplateInput) =>
        Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined))

      const get = (user: User, id: string) =>
        (isUuid(id) ? repo.findForUser(user.id, id) : Effect.succeedNone).pipe(
          Effect.flatMap(Option.match({ onNone: () => Effect.fail(new TemplateNotFound()), onSome: Effect.succeed }))
        )

      return TemplateService.of({
        create: (user, input) =>
          Effect.gen(function*() {
            const req = yield* decodeCreate(defined(input))
            const body = yield* validateBody(req.body)
            const models = yield* Effect.fromResult(mergeModels([], req.models ?? []))
            return yield* createWithinLimit(policy, user.tier, "templates", repo.count(user.id), (limit) =>
              Effect.gen(function*() {
                const now = yield* DateTime.now
                const template: Template = {
                  id: (yield* ids.next) as TemplateId,
                  user_id: user.id,
                  name: req.name,
                  description: req.description,
                  body,
                  models,
                  created_at: now,
                  updated_at: now
                }
                return yield* repo.insert(template, limit)
              }))
          }),
        get,
        list: (user, page) => Effect.flatMap(pageOf(page), (p) => repo.list(user.id, p)),
        update: (user, id, input) =>
          Effect.gen(function*() {
            const req = yield* decodeUpdate(defined(input))
            const body = req.body === undefined ? undefined : yield* validateBody(req.body)
            const models = req.models === undefined ? undefined : yield* Effect.fromResult(mergeModels([], req.models))
            const current = yield* get(user, id)
            const wanted = { ...req, ...(body === undefined ? {} : { body }), ...(models === undefined ? {} : { models }) }
            return yield* repo.update(user.id, id, changesOf(current, wanted, yield* DateTime.now))
          }),
        delete: (user, id) =>
          (isUuid(id) ? repo.delete(user.id, id) : Effect.succeed(false)).pipe(
            Effect.flatMap((deleted) => deleted ? Effect.void : Effect.fail(new TemplateNotFound()))
          )
      })
    })
  )
}
