/**
 * The definition a request names: its `workflow_json`, or one of the caller's templates (exactly
 * one of them), with the model files it declares (a template's).
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { User } from "../../domain/Account.js"
import { type StorageError, TemplateNotFound, ValidationError } from "../../domain/Errors.js"
import { isUuid } from "../../domain/Ids.js"
import type { JsonObject } from "../../domain/Json.js"
import type { ModelFile } from "../../domain/ModelFiles.js"
import type { TemplateRepository } from "../../ports/TemplateRepository.js"
import { validateWorkflowJson } from "../../domain/WorkflowJson.js"

/** The definition and the template's model files (none for a `workflow_json`). */
export const sourceOf = (
  templates: TemplateRepository["Service"],
  user: User,
  input: { readonly workflow_json?: unknown; readonly template_id?: string | undefined }
): Effect.Effect<{ readonly workflow_json: JsonObject; readonly models: ReadonlyArray<ModelFile> }, ValidationError | TemplateNotFound | StorageError> =>
  Effect.gen(function*() {
    const hasJson = input.workflow_json !== undefined
    const templateId = input.template_id ?? ""
    if (hasJson && templateId !== "") {
      return yield* Effect.fail(ValidationError.field("template_id", "send either workflow_json or template_id, not both"))
    }
    if (!hasJson && templateId === "") return yield* Effect.fail(ValidationError.field("workflow_json", "is required"))
    const source = hasJson
      ? { body: input.workflow_json, models: [] }
      : yield* (isUuid(templateId) ? templates.findForUser(user.id, templateId) : Effect.succeedNone).pipe(
        Effect.flatMap(Option.match({ onNone: () => Effect.fail(new TemplateNotFound()), onSome: Effect.succeed }))
      )
    return { workflow_json: yield* Effect.fromResult(validateWorkflowJson(source.body)), models: source.models }
  })

export const definitionOf = (
  templates: TemplateRepository["Service"],
  user: User,
  input: { readonly workflow_json?: unknown; readonly template_id?: string | undefined }
) => Effect.map(sourceOf(templates, user, input), (s) => s.workflow_json)
