/**
 * What the API's OpenAPI document adds to what Effect generates (`OpenApi.Transform`).
 */
type SpecNode = { [key: string]: unknown }
const isNode = (u: unknown): u is SpecNode => typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * A parameter whose schema has a description carries it too (as the contract's document always
 * has): a viewer shows a parameter's own description, not its schema's.
 */
export const withParameterDescriptions = (spec: Record<string, unknown>): Record<string, unknown> => {
  const paths = isNode(spec["paths"]) ? spec["paths"] : {}
  for (const item of Object.values(paths)) {
    if (!isNode(item)) continue
    for (const op of Object.values(item)) {
      const parameters = isNode(op) ? op["parameters"] : undefined
      if (!Array.isArray(parameters)) continue
      for (const parameter of parameters) {
        if (!isNode(parameter) || parameter["description"] !== undefined) continue
        const schema = parameter["schema"]
        if (isNode(schema) && typeof schema["description"] === "string") parameter["description"] = schema["description"]
      }
    }
  }
  return spec
}

/**
 * An operation whose binary response body (`format: binary`) has a schema without a description:
 * the schema carries the response's, as the contract's document has it (Effect writes the schema
 * of a `Uint8Array` body without its annotations). For one operation (`OpenApi.Transform` on it).
 */
export const withBinaryBodyDescriptions = (operation: Record<string, unknown>): Record<string, unknown> => {
  const responses = isNode(operation["responses"]) ? operation["responses"] : {}
  for (const response of Object.values(responses)) {
    if (!isNode(response) || typeof response["description"] !== "string" || !isNode(response["content"])) continue
    for (const media of Object.values(response["content"])) {
      const schema = isNode(media) ? media["schema"] : undefined
      if (isNode(schema) && schema["format"] === "binary" && schema["description"] === undefined) schema["description"] = response["description"]
    }
  }
  return operation
}
