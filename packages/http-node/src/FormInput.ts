/** Turning multipart forms into the inputs of the core's use cases, naming any field that is wrong. */
import type * as FileSystem from "@effect/platform/FileSystem"
import {
  type CreateTemplateInput,
  type CreateWorkflowInput,
  isParamField,
  type RerunWorkflowInput,
  type SuppliedParam,
  type UploadedFile
} from "@wes/core"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { badRequest, type BadRequestError, type InternalError } from "./ApiErrors.js"
import { fileContent, fileText, type Form, type FormFile } from "./Form.js"

type Part = { readonly _tag: "Field"; readonly key: string; readonly value: string } | { readonly _tag: "File"; readonly key: string; readonly file: FormFile }

const partsOf = (form: Form): ReadonlyArray<Part> => [
  ...form.fields.map((f) => ({ _tag: "Field" as const, key: f.key, value: f.value })),
  ...form.files.map((f) => ({ _tag: "File" as const, key: f.key, file: f }))
]

const duplicate = (key: string) => badRequest(`${key}: is sent more than once`, [{ field: key, message: "is sent more than once" }])
const unexpected = (key: string, allowed: string) =>
  badRequest(`${key}: is not an accepted field (${allowed})`, [{ field: key, message: "is not an accepted field" }])
const mustBeText = (key: string) => badRequest(`${key}: must be a text field, not a file`, [{ field: key, message: "must be a text field" }])

/** Parses a JSON document sent as a file part or a text field. */
const jsonOf = (key: string, part: Part): Effect.Effect<unknown, BadRequestError | InternalError, FileSystem.FileSystem> =>
  Effect.flatMap(part._tag === "File" ? fileText(part.file) : Effect.succeed(part.value), (text) =>
    Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: (e) => {
        const reason = e instanceof Error ? e.message : String(e)
        return badRequest(`${key}: is not valid JSON (${reason})`, [{ field: key, message: "is not valid JSON" }])
      }
    }))

const paramOf = (part: Part): Effect.Effect<SuppliedParam<UploadedFile>, never, FileSystem.FileSystem> =>
  part._tag === "Field"
    ? Effect.succeed({ field: part.key, value: { _tag: "Text", text: part.value } })
    : Effect.map(Effect.context<FileSystem.FileSystem>(), (ctx) => ({
      field: part.key,
      value: {
        _tag: "File" as const,
        file: {
          filename: part.file.name,
          content_type: part.file.contentType || "application/octet-stream",
          content: fileContent(part.file).pipe(Stream.provideContext(ctx))
        }
      }
    }))

/** Collects named single-valued fields and the dynamic parameters of a form. */
const collect = (form: Form, named: ReadonlyArray<string>, allowed: string) =>
  Effect.gen(function*() {
    const single = new Map<string, Part>()
    const params: Array<SuppliedParam<UploadedFile>> = []
    for (const part of partsOf(form)) {
      if (isParamField(part.key)) {
        params.push(yield* paramOf(part))
      } else if (named.includes(part.key)) {
        if (single.has(part.key)) return yield* Effect.fail(duplicate(part.key))
        single.set(part.key, part)
      } else {
        return yield* Effect.fail(unexpected(part.key, allowed))
      }
    }
    return { single, params }
  })

const text = (single: ReadonlyMap<string, Part>, key: string): Effect.Effect<string | undefined, BadRequestError> => {
  const part = single.get(key)
  if (part === undefined) return Effect.succeed(undefined)
  return part._tag === "Field" ? Effect.succeed(part.value) : Effect.fail(mustBeText(key))
}

/** Create-workflow form: name, workflow_json (file) or template_id, tags, `$`/`#` parameters. */
export const createWorkflowInput = (form: Form, idempotencyKey: string | undefined) =>
  Effect.gen(function*() {
    const { params, single } = yield* collect(form, ["name", "workflow_json", "template_id", "tags"], "name, workflow_json, template_id, tags, $<param>, #<param>")
    const json = single.get("workflow_json")
    const input: CreateWorkflowInput = {
      name: yield* text(single, "name"),
      workflow_json: json === undefined ? undefined : yield* jsonOf("workflow_json", json),
      template_id: yield* text(single, "template_id"),
      tags: yield* text(single, "tags"),
      params,
      idempotency_key: idempotencyKey
    }
    return input
  })

/** Rerun form: only `$`/`#` parameters. */
export const rerunWorkflowInput = (form: Form, idempotencyKey: string | undefined) =>
  Effect.map(collect(form, [], "only $<param> and #<param>"), ({ params }): RerunWorkflowInput => ({ params, idempotency_key: idempotencyKey }))

/** Template forms: name, description, body (a JSON file, or text). */
export const templateInput = (form: Form) =>
  Effect.gen(function*() {
    const { params, single } = yield* collect(form, ["name", "description", "body"], "name, description, body")
    if (params.length > 0) return yield* Effect.fail(unexpected(params[0]!.field, "name, description, body"))
    const body = single.get("body")
    const input: CreateTemplateInput = {
      name: yield* text(single, "name"),
      description: yield* text(single, "description"),
      body: body === undefined ? undefined : yield* jsonOf("body", body)
    }
    return input
  })
