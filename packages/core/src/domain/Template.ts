/** Templates: reusable workflow definitions, personal to each user. */
import * as Schema from "effect/Schema"
import { TemplateId, UserId } from "./Ids.js"
import { JsonObject, Timestamp } from "./Json.js"
import { ModelFiles } from "./ModelFiles.js"

export const TemplateName = Schema.String.check(
  Schema.isMinLength(1, { message: "must be 1-100 characters" }),
  Schema.isMaxLength(100, { message: "must be 1-100 characters" })
)
export const TemplateDescription = Schema.String.check(
  Schema.isMinLength(1, { message: "must be 1-500 characters" }),
  Schema.isMaxLength(500, { message: "must be 1-500 characters" })
)

const listFields = {
  id: TemplateId,
  user_id: UserId,
  name: Schema.String,
  description: Schema.String,
  created_at: Timestamp,
  updated_at: Timestamp
}

/**
 * A template with its body: stored form, and what create, get and update return. `models`: the
 * model files every workflow made from it needs (empty: none).
 */
export const Template = Schema.Struct({ ...listFields, body: JsonObject, models: ModelFiles }).annotate({ identifier: "Template" })
export interface Template extends Schema.Schema.Type<typeof Template> {}

/** A template in list responses: no body. */
export const TemplateListItem = Schema.Struct(listFields).annotate({ identifier: "TemplateListItem" })
export interface TemplateListItem extends Schema.Schema.Type<typeof TemplateListItem> {}

export const toTemplateListItem = (t: Template): TemplateListItem => ({
  id: t.id,
  user_id: t.user_id,
  name: t.name,
  description: t.description,
  created_at: t.created_at,
  updated_at: t.updated_at
})

/** Fields of create-template after the body file has been read and parsed. */
export const CreateTemplateRequest = Schema.Struct({
  name: TemplateName,
  description: TemplateDescription,
  body: JsonObject,
  models: Schema.optionalKey(ModelFiles)
})
export interface CreateTemplateRequest extends Schema.Schema.Type<typeof CreateTemplateRequest> {}

/** Fields of update-template: omitted fields keep their values. */
export const UpdateTemplateRequest = Schema.Struct({
  name: Schema.optionalKey(TemplateName),
  description: Schema.optionalKey(TemplateDescription),
  body: Schema.optionalKey(JsonObject),
  models: Schema.optionalKey(ModelFiles)
})
export interface UpdateTemplateRequest extends Schema.Schema.Type<typeof UpdateTemplateRequest> {}
