/** The definition a request names: its `workflow_json`, or one of the caller's templates (exactly one of them). */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { User } from "../../domain/Account.js"
import { TemplateNotFound, ValidationError } from "../../domain/Errors.js"
import { isUuid } from "../../domain/Ids.js"
import type { TemplateRepository } from "../../ports/TemplateRepository.js"
import { validateWorkflowJson } from "../../domain/WorkflowJson.js"

export const definitionOf = (
  templates: TemplateRepository["Service"],
  user: User,
  input: { readonly workflow_json?: unknown; readonly template_id?: string | undefined }
) =>
  Effect.gen(function*() {
    const hasJson = input.workflow_json !== undefined
    const templateId = input.template_id ?? ""
    if (hasJson && templateId !== "") {
      return yield* Effect.fail(ValidationError.field("template_id", "send either workflow_json or template_id, not both"))
    }
    if (!hasJson && templateId === "") return yield* Effect.fail(ValidationError.field("workflow_json", "is required"))
    const definition = hasJson
      ? input.workflow_json
      : yield* (isUuid(templateId) ? templates.findForUser(user.id, templateId) : Effect.succeedNone).pipe(
        Effect.flatMap(Option.match({ onNone: () => Effect.fail(new TemplateNotFound()), onSome: (t) => Effect.succeed(t.body) }))
      )
    return yield* Effect.fromResult(validateWorkflowJson(definition))
  })
