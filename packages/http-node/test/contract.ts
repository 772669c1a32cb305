/**
 * The server's own OpenAPI document as a response checker: for an operation and a response,
 * says whether the status is declared for that operation and whether the body is valid against
 * the declared schema (JSON Schema 2020-12, compiled by ajv with ajv-formats).
 */
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js"
import formats from "ajv-formats"

export interface SpecDocument {
  readonly openapi: string
  readonly paths: Record<string, Record<string, SpecOperation>>
  readonly components: { readonly schemas: Record<string, unknown> }
}

export interface SpecParameter {
  readonly name: string
  readonly in: "path" | "query" | "header" | "cookie"
  readonly required?: boolean
  readonly schema?: unknown
}

export interface SpecOperation {
  readonly operationId: string
  readonly parameters?: ReadonlyArray<SpecParameter>
  readonly requestBody?: { readonly content: Record<string, { readonly schema?: unknown }> }
  readonly responses: Record<string, { readonly content?: Record<string, { readonly schema?: unknown }> }>
  readonly security?: ReadonlyArray<unknown>
}

/** One operation of the document. */
export interface Operation {
  readonly method: string
  /** The path template, `/v1/workflow/{id}`. */
  readonly path: string
  readonly spec: SpecOperation
}

export interface Contract {
  readonly spec: SpecDocument
  readonly operations: ReadonlyArray<Operation>
  /** Undefined when the response is one the document declares for `operation`; else what is wrong. */
  readonly check: (operation: Operation, response: { readonly status: number; readonly contentType: string; readonly body: string }) => string | undefined
  /** Resolves a `$ref` of the document. */
  readonly resolve: (schema: unknown) => unknown
}

const DOC_ID = "wes-openapi"

/** Points every `#/...` reference at the document registered under DOC_ID. */
const rebase = (node: unknown): unknown => {
  if (Array.isArray(node)) return node.map(rebase)
  if (typeof node !== "object" || node === null) return node
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(node)) {
    // `$id`s inside schemas (Effect's `unknown`) would re-root references; they carry no meaning.
    if (k === "$id") continue
    out[k] = k === "$ref" && typeof v === "string" && v.startsWith("#/") ? `${DOC_ID}${v}` : rebase(v)
  }
  return out
}

const mediaType = (contentType: string) => contentType.split(";")[0]!.trim().toLowerCase()

export const makeContract = (spec: SpecDocument): Contract => {
  const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true })
  formats.default(ajv)
  ajv.addSchema({ $id: DOC_ID, components: rebase(spec.components) })
  const compiled = new Map<string, ValidateFunction>()
  const validatorFor = (key: string, schema: unknown) => {
    let v = compiled.get(key)
    if (v === undefined) {
      v = ajv.compile(rebase(schema) as object)
      compiled.set(key, v)
    }
    return v
  }
  const operations: Array<Operation> = []
  for (const [path, methods] of Object.entries(spec.paths)) {
    for (const [method, op] of Object.entries(methods)) operations.push({ method: method.toUpperCase(), path, spec: op })
  }
  const resolve = (schema: unknown): unknown => {
    if (typeof schema === "object" && schema !== null && "$ref" in schema && typeof schema.$ref === "string") {
      const name = schema.$ref.replace("#/components/schemas/", "")
      return resolve(spec.components.schemas[name])
    }
    return schema
  }
  return {
    spec,
    operations,
    resolve,
    check: (operation, response) => {
      const declared = operation.spec.responses[String(response.status)]
      if (declared === undefined) {
        return `${operation.method} ${operation.path}: status ${response.status} is not declared (declared: ${Object.keys(operation.spec.responses).join(", ")})`
      }
      const content = declared.content
      if (content === undefined || Object.keys(content).length === 0) {
        return response.body === "" ? undefined : `${operation.method} ${operation.path} ${response.status}: a body where none is declared`
      }
      const type = mediaType(response.contentType)
      const media = content[type]
      if (media === undefined) {
        return `${operation.method} ${operation.path} ${response.status}: content type ${JSON.stringify(type)} is not declared (${Object.keys(content).join(", ")})`
      }
      if (type !== "application/json" || media.schema === undefined) return undefined
      let body: unknown
      try {
        body = JSON.parse(response.body)
      } catch {
        return `${operation.method} ${operation.path} ${response.status}: body is not JSON: ${response.body.slice(0, 200)}`
      }
      const validate = validatorFor(`${operation.method} ${operation.path} ${response.status}`, media.schema)
      if (validate(body)) return undefined
      return `${operation.method} ${operation.path} ${response.status}: body does not match the declared schema: ` +
        `${ajv.errorsText(validate.errors)}; body: ${response.body.slice(0, 300)}`
    }
  }
}
