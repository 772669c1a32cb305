/**
 * A query string as the declared query schema expects it: a parameter sent once is a string, and
 * is wrapped in an array where the schema declares an array (as HttpApiBuilder does).
 */
import * as AST from "effect/SchemaAST"
import type { Search } from "./Endpoints.js"

/** Whether the schema's field `key` is an array (through refinements, transformations and unions). */
const expectsArray = (ast: AST.AST, key: string): boolean => {
  switch (ast._tag) {
    case "TupleType":
      return true
    case "TypeLiteral": {
      const field = ast.propertySignatures.find((p) => p.name === key)
      return field !== undefined && expectsArray(field.type, "")
    }
    case "Union":
      return ast.types.some((t) => expectsArray(t, key))
    case "Refinement":
    case "Transformation":
      return expectsArray(ast.from, key)
    case "Suspend":
      return expectsArray(ast.f(), key)
    default:
      return false
  }
}

export const normalizeQuery = (search: Search, ast: AST.AST): Search => {
  let out: Record<string, string | ReadonlyArray<string>> | undefined
  for (const key in search) {
    const value = search[key]!
    if (typeof value === "string" && expectsArray(ast, key)) {
      out ??= { ...search }
      out[key] = [value]
    }
  }
  return out ?? search
}
