/**
 * Describe a workflow's parameters before creating it: each placeholder, the inputs it fills and
 * the type each takes on the runners the workflow may go to (what create converts values to).
 */
import * as Effect from "effect/Effect"
import type { User } from "../../domain/Account.js"
import { Scheduler } from "../Scheduler.js"
import { ValidationError } from "../../domain/Errors.js"
import { MAX_TAGS, normalizeTags } from "../../domain/Tags.js"
import { TemplateRepository } from "../../ports/TemplateRepository.js"
import { describeParameters } from "../../domain/ParameterView.js"
import { findPlaceholders } from "../../domain/Placeholders.js"
import { definitionOf } from "./Definition.js"
import type { DescribeParametersInput } from "./Inputs.js"

export const makeDescribeParameters = Effect.gen(function*() {
  const templates = yield* TemplateRepository
  const scheduler = yield* Scheduler
  const describe = (user: User, input: DescribeParametersInput) =>
    Effect.gen(function*() {
      const graph = yield* definitionOf(templates, user, input)
      const placeholders = yield* Effect.fromResult(findPlaceholders(graph))
      const tags = yield* Effect.fromResult(normalizeTags(input.tags ?? []))
      if (tags.length > MAX_TAGS) return yield* Effect.fail(ValidationError.field("tags", `at most ${MAX_TAGS} tags are allowed`))
      const parameters = describeParameters(graph, placeholders, yield* scheduler.inputTypes(user, tags))
      return { parameters }
    })
  return { describeParameters: describe }
})
