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
