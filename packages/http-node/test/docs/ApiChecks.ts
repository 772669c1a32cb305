/**
 * What keeps docs/api.md whole against the OpenAPI document, beyond its generated regions: every
 * operation has its region under a heading that names it, every heading names an operation the
 * document has (or one the document leaves out on purpose), every schema an answer carries has its
 * table, and the statuses the hand-written text shows for an operation are ones it declares.
 */
import type { ApiRegion } from "./ApiRegions.js"
import { type Heading, headingBefore, headings, sectionEnd } from "./Headings.js"
import { isObj, type Json, namedAs, type Obj, objAt, refName, type Schemas, tableOf } from "./Schemas.js"

/** Paths the page documents that the OpenAPI document does not describe, and why. */
export const OUTSIDE_OPENAPI: ReadonlyArray<readonly [RegExp, string]> = [
  [/^\/admin\//, "the operator API is not part of the public document"],
  [/^\/v1\/openapi\.json$/, "the document itself"],
  [/^\/docs$/, "the page rendered from the document"],
  [/^\/(ui\/.*)?$/, "the dashboard"]
]

const OPERATION = /`(GET|POST|PUT|PATCH|DELETE) (\/[^`\s]*)`/g

export const operationsOf = (spec: Obj): ReadonlyArray<readonly [string, Obj]> =>
  Object.entries(objAt(spec, "paths")).flatMap(([path, item]) =>
    Object.entries(isObj(item) ? item : {}).map(([method, op]) => [`${method.toUpperCase()} ${path}`, isObj(op) ? op : {}] as const))

/** Named schemas with fields that a successful answer carries, directly or inside another. */
const answered = (s: Schemas, spec: Obj): ReadonlySet<string> => {
  const found = new Set<string>()
  const visited = new Set<string>()
  const walk = (node: Json | undefined): void => {
    if (Array.isArray(node)) return node.forEach(walk)
    if (!isObj(node)) return
    const name = refName(node) ?? namedAs(s, node)
    if (name !== undefined && !visited.has(name)) {
      visited.add(name)
      if (Object.keys(objAt(objAt(s.components, name), "properties")).length > 0) found.add(name)
      walk(s.components[name])
    }
    Object.values(node).forEach(walk)
  }
  for (const [, op] of operationsOf(spec)) {
    for (const [status, response] of Object.entries(objAt(op, "responses"))) if (status.startsWith("2")) walk(response)
  }
  return found
}

/** The statuses the hand-written part of a section shows: "Errors: 400 ...; 401", a Status table, "201:". */
export const statusesShown = (section: string): ReadonlyArray<string> => {
  const shown: Array<string> = []
  let fenced = false
  let statusTable = false
  for (const line of section.split("\n")) {
    if (line.startsWith("```")) fenced = !fenced
    if (fenced) continue
    statusTable = line.startsWith("|") && (statusTable || /^\| *Status *\|/.test(line))
    if (statusTable) shown.push(...(/^\| *(\d{3}) *\|/.exec(line)?.slice(1) ?? []))
    shown.push(...(/^(?:Response:? )?\*{0,2}([1-5]\d\d)\b/.exec(line)?.slice(1) ?? []))
  }
  const errors = section.replace(/```[\s\S]*?```/g, "").split(/\n\s*\n/).map((p) => /\bErrors(?: \([^)]*\))?:([\s\S]*)$/.exec(p)?.[1])
  for (const text of errors) {
    // The statuses listed, not numbers inside a message or a parenthesis.
    let listed = (text ?? "").replace(/`[^`]*`/g, "")
    while (/\([^()]*\)/.test(listed)) listed = listed.replace(/\([^()]*\)/g, "")
    for (const m of listed.matchAll(/(?:^|[;,])\s*([1-5]\d\d)\b/g)) shown.push(m[1]!)
  }
  return [...new Set(shown)]
}

/** Every way docs/api.md and the OpenAPI document disagree, as sentences. */
export const apiProblems = (page: string, spec: Obj, s: Schemas, regions: ReadonlyArray<ApiRegion>): ReadonlyArray<string> => {
  const problems: Array<string> = []
  const all = headings(page)
  const operations = new Map(operationsOf(spec))
  const opRegions = regions.filter((r) => r.kind._tag === "operation")
  const named = (h: Heading | undefined) => [...(h?.text ?? "").matchAll(OPERATION)].map((m) => `${m[1]} ${m[2]}`)
  for (const r of regions) {
    const target = r.kind._tag === "operation" ? operations.get(r.name.slice("openapi ".length)) : s.components[r.kind.schema]
    if (target === undefined) problems.push(`has a region "${r.name}", which the OpenAPI document does not have: remove it`)
    if (r.kind._tag === "schema" && r.kind.beyond !== undefined && s.components[r.kind.beyond] === undefined) problems.push(`region "${r.name}": the OpenAPI document has no schema ${r.kind.beyond}`)
    if (regions.filter((o) => o.name === r.name).length > 1 && regions.find((o) => o.name === r.name) === r) problems.push(`has the region "${r.name}" more than once`)
  }
  for (const [key, op] of operations) {
    const region = opRegions.find((r) => r.name === `openapi ${key}`)
    if (region === undefined) {
      problems.push(`does not document ${key}: add a heading naming \`${key}\` with a region "<!-- begin openapi ${key}: -->" "<!-- end openapi ${key} -->" under it, then run pnpm docs:api`)
      continue
    }
    const heading = headingBefore(all, region.begin)
    if (!named(heading).includes(key)) problems.push(`the region of ${key} is under the heading "${heading?.text ?? "(none)"}", which does not name \`${key}\``)
    if (heading === undefined) continue
    const declared = new Set(Object.keys(objAt(op, "responses")))
    let section = page.slice(heading.at, sectionEnd(all, heading, page.length))
    for (const r of regions) section = section.replace(r.content, "")
    for (const status of statusesShown(section)) {
      if (!declared.has(status)) problems.push(`the section "${heading.text}" shows status ${status}, which the OpenAPI document does not declare for ${key}`)
    }
  }
  for (const h of all) {
    for (const key of named(h)) {
      const path = key.split(" ")[1]!
      const outside = OUTSIDE_OPENAPI.find(([pattern]) => pattern.test(path))
      if (operations.has(key) && outside !== undefined) problems.push(`the heading "${h.text}" names ${key} as outside the OpenAPI document (${outside[1]}), but the document has it`)
      if (!operations.has(key) && outside === undefined) problems.push(`the heading "${h.text}" names ${key}, which the OpenAPI document does not have`)
    }
  }
  for (const name of answered(s, spec)) {
    if (tableOf(s, name) === undefined) problems.push(`has no table of ${name}, which an answer carries: add "<!-- begin openapi schema ${name}: -->" "<!-- end openapi schema ${name} -->" under a heading, then run pnpm docs:api`)
  }
  return problems.map((p) => `docs/api.md ${p}`)
}
