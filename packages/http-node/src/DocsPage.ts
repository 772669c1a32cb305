/**
 * `GET /docs`: the API reference as one HTML page, rendered on the server from the OpenAPI
 * document (so it cannot drift from it). No script and no CDN: it works offline and costs a few
 * kilobytes, where a bundled JavaScript viewer costs megabytes of memory in every process.
 */
import * as OpenApi from "effect/http-api/OpenApi"
import { WesApi } from "@wes/api"

type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }
type Obj = { readonly [key: string]: Json }

const isObj = (u: Json | undefined): u is Obj => typeof u === "object" && u !== null && !Array.isArray(u)

const escape = (s: string): string =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")

const refName = (ref: string): string => ref.split("/").pop() ?? ref

/** A short, readable type of a JSON schema, with links to named schemas. */
const typeOf = (schema: Json | undefined, depth = 0): string => {
  if (!isObj(schema) || depth > 4) return "any"
  if (typeof schema["$ref"] === "string") {
    const name = refName(schema["$ref"])
    return `<a href="#schema-${escape(name)}">${escape(name)}</a>`
  }
  for (const key of ["anyOf", "oneOf"] as const) {
    const members = schema[key]
    if (Array.isArray(members)) return members.map((m) => typeOf(m, depth + 1)).join(" | ")
  }
  if (Array.isArray(schema["enum"])) return schema["enum"].map((v) => `<code>${escape(JSON.stringify(v))}</code>`).join(" | ")
  if (schema["type"] === "array") return `${typeOf(schema["items"], depth + 1)}[]`
  if (schema["type"] === "object" && isObj(schema["properties"])) return "object"
  const format = typeof schema["format"] === "string" ? ` (${escape(schema["format"])})` : ""
  return `${escape(typeof schema["type"] === "string" ? schema["type"] : "any")}${format}`
}

/** The fields of an object schema as a table. */
const fields = (schema: Json | undefined): string => {
  if (!isObj(schema) || !isObj(schema["properties"])) return ""
  const required = new Set(Array.isArray(schema["required"]) ? schema["required"].map(String) : [])
  const rows = Object.entries(schema["properties"]).map(([name, s]) => {
    const description = isObj(s) && typeof s["description"] === "string" ? escape(s["description"]) : ""
    return `<tr><td><code>${escape(name)}</code></td><td>${typeOf(s)}</td><td>${required.has(name) ? "yes" : ""}</td><td>${description}</td></tr>`
  })
  return `<table><thead><tr><th>field</th><th>type</th><th>required</th><th>notes</th></tr></thead><tbody>${rows.join("")}</tbody></table>`
}

const operation = (method: string, path: string, op: Obj): string => {
  const id = typeof op["operationId"] === "string" ? op["operationId"] : `${method}-${path}`
  const summary = typeof op["summary"] === "string" ? escape(op["summary"]) : ""
  const params = Array.isArray(op["parameters"]) ? op["parameters"].filter(isObj) : []
  const paramRows = params.map((p) =>
    `<tr><td><code>${escape(String(p["name"]))}</code></td><td>${escape(String(p["in"]))}</td><td>${typeOf(p["schema"])}</td><td>${p["required"] === true ? "yes" : ""}</td></tr>`
  )
  const body = isObj(op["requestBody"]) && isObj(op["requestBody"]["content"]) ? op["requestBody"]["content"] : undefined
  const bodies = body === undefined ? [] : Object.entries(body).map(([type, media]) => {
    const schema = isObj(media) ? media["schema"] : undefined
    const description = isObj(schema) && typeof schema["description"] === "string" ? `<p>${escape(schema["description"])}</p>` : ""
    return `<p>Body <code>${escape(type)}</code>: ${typeOf(schema)}</p>${description}${fields(schema)}`
  })
  const responses = isObj(op["responses"]) ? Object.entries(op["responses"]) : []
  const responseRows = responses.map(([status, r]) => {
    const content = isObj(r) && isObj(r["content"]) ? Object.entries(r["content"]) : []
    const types = content.map(([type, media]) => `<code>${escape(type)}</code> ${typeOf(isObj(media) ? media["schema"] : undefined)}`).join("<br>")
    const description = isObj(r) && typeof r["description"] === "string" ? escape(r["description"]) : ""
    return `<tr><td>${escape(status)}</td><td>${description}</td><td>${types}</td></tr>`
  })
  const secured = Array.isArray(op["security"]) && op["security"].length > 0
  return `<section class="op" id="op-${escape(id)}">
<h3><span class="method ${escape(method)}">${escape(method.toUpperCase())}</span> <code>${escape(path)}</code></h3>
<p>${summary}${secured ? ' <span class="auth">Bearer token</span>' : ""}</p>
${paramRows.length > 0 ? `<table><thead><tr><th>parameter</th><th>in</th><th>type</th><th>required</th></tr></thead><tbody>${paramRows.join("")}</tbody></table>` : ""}
${bodies.join("")}
<table><thead><tr><th>status</th><th>meaning</th><th>body</th></tr></thead><tbody>${responseRows.join("")}</tbody></table>
</section>`
}

/** The reference page for `spec`. */
export const renderDocsPage = (spec: Obj): string => {
  const info = isObj(spec["info"]) ? spec["info"] : {}
  const title = typeof info["title"] === "string" ? info["title"] : "API"
  const description = typeof info["description"] === "string" ? info["description"] : ""
  const paths = isObj(spec["paths"]) ? Object.entries(spec["paths"]) : []
  const byTag = new Map<string, Array<string>>()
  const toc = new Map<string, Array<string>>()
  for (const [path, item] of paths) {
    if (!isObj(item)) continue
    for (const [method, op] of Object.entries(item)) {
      if (!isObj(op)) continue
      const tag = Array.isArray(op["tags"]) && typeof op["tags"][0] === "string" ? op["tags"][0] : "other"
      if (!byTag.has(tag)) {
        byTag.set(tag, [])
        toc.set(tag, [])
      }
      byTag.get(tag)!.push(operation(method, path, op))
      const id = typeof op["operationId"] === "string" ? op["operationId"] : `${method}-${path}`
      toc.get(tag)!.push(`<li><a href="#op-${escape(id)}"><span class="method ${escape(method)}">${escape(method.toUpperCase())}</span> ${escape(path)}</a></li>`)
    }
  }
  const components = isObj(spec["components"]) && isObj(spec["components"]["schemas"]) ? Object.entries(spec["components"]["schemas"]) : []
  const schemas = components.map(([name, schema]) => {
    const note = isObj(schema) && typeof schema["description"] === "string" ? `<p>${escape(schema["description"])}</p>` : ""
    const table = fields(schema)
    return `<section id="schema-${escape(name)}"><h3>${escape(name)}</h3>${note}${table !== "" ? table : `<p>${typeOf(schema)}</p>`}</section>`
  })
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)}</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;margin:0;display:flex;color:#1d2330}
nav{width:300px;flex:none;height:100vh;overflow:auto;position:sticky;top:0;background:#f5f6f8;padding:16px;box-sizing:border-box;font-size:13px}
nav ul{list-style:none;padding:0;margin:0 0 12px}nav a{color:inherit;text-decoration:none}
main{padding:24px 40px;max-width:960px}code{font:13px ui-monospace,monospace;background:#f0f1f4;padding:1px 4px;border-radius:3px}
table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}td,th{border:1px solid #dde0e6;padding:4px 8px;text-align:left;vertical-align:top}
.op{border-top:1px solid #dde0e6;padding-top:8px}.method{font:bold 11px ui-monospace,monospace;padding:2px 5px;border-radius:3px;color:#fff;background:#6b7280}
.get{background:#2563eb}.post{background:#16a34a}.put,.patch{background:#d97706}.delete{background:#dc2626}.auth{font-size:12px;color:#6b7280}
</style></head><body>
<nav><strong>${escape(title)}</strong><p><a href="/v1/openapi.json">OpenAPI document</a></p>
${[...toc].map(([tag, items]) => `<p><strong>${escape(tag)}</strong></p><ul>${items.join("")}</ul>`).join("")}
<p><strong>Schemas</strong></p><ul>${components.map(([name]) => `<li><a href="#schema-${escape(name)}">${escape(name)}</a></li>`).join("")}</ul></nav>
<main><h1>${escape(title)}</h1><p>${escape(description)}</p>
${[...byTag].map(([tag, ops]) => `<h2>${escape(tag)}</h2>${ops.join("")}`).join("")}
<h2>Schemas</h2>${schemas.join("")}</main></body></html>`
}

/** The page for WES's public API. */
export const docsPage = (): string =>
  // The document as the JSON it is served as (once, at start).
  renderDocsPage(JSON.parse(JSON.stringify(OpenApi.fromApi(WesApi))) as Obj)
