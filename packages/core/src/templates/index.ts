/** Templates: reusable workflow definitions, personal to their owner. */
export {
  CreateTemplateRequest,
  Template,
  TemplateDescription,
  TemplateListItem,
  TemplateName,
  toTemplateListItem,
  UpdateTemplateRequest
} from "./Template.js"
export { TemplateRepository } from "./TemplateRepository.js"
export { type CreateTemplateInput, TemplateService, type UpdateTemplateInput } from "./TemplateService.js"
