/**
 * The generated pages of docs/: what each should be, given the code, and what no generator can
 * mend. `pnpm docs:map` and `pnpm docs:api` write them (write.ts); docs-map.test.ts and
 * docs-api.test.ts compare.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { apiProblems, operationsOf } from "./ApiChecks.js"
import { regionsOf, rewrite, schemaAnchors } from "./ApiRegions.js"
import { renderOperation, renderSchema } from "./ApiRender.js"
import { missingAnchors } from "./Headings.js"
import { brokenLinks, relink } from "./Links.js"
import { regionContent, replaceRegion } from "./Markers.js"
import { type Obj, objAt, type Schemas } from "./Schemas.js"
import { notesIn } from "./Tables.js"
import { CORE_REGION, corePartsTable, MAP_REGION, workspaceMap } from "./WorkspaceMap.js"

export const ROOT = fileURLToPath(new URL("../../../../", import.meta.url))
export const DOCS = path.join(ROOT, "docs")

export interface Page {
  /** Relative to the repository's root. */
  readonly file: string
  readonly current: string
  readonly expected: string
  /** What regenerating does not mend, as sentences. */
  readonly problems: ReadonlyArray<string>
}

const read = (file: string): string => fs.readFileSync(path.join(ROOT, file), "utf8")

/** docs/architecture.md with its map drawn from the code, and links to moved files followed. */
export const architecturePage = (): Page => {
  const file = "docs/architecture.md"
  const current = read(file)
  const parts = corePartsTable(ROOT, notesIn(regionContent(current, file, CORE_REGION)))
  const expected = relink(replaceRegion(replaceRegion(current, file, MAP_REGION, workspaceMap(ROOT)), file, CORE_REGION, parts.text), DOCS)
  const problems = [
    ...parts.undescribed.map((part) => `${file} does not say what core's ${part} holds: write it in the "core parts" table`),
    ...brokenLinks(expected, DOCS).map((target) => `${file} links ${target}, which does not exist (and no file of that name is in its package): fix the link`),
    ...missingAnchors(expected).map((anchor) => `${file} links #${anchor}, which no heading of the page has`)
  ]
  return { file, current, expected, problems }
}

/** docs/api.md with its regions written from `spec`, the OpenAPI document. */
export const apiPage = (spec: Obj): Page => {
  const file = "docs/api.md"
  const current = read(file)
  const regions = regionsOf(current)
  const schemas: Schemas = { components: objAt(objAt(spec, "components"), "schemas"), anchors: schemaAnchors(current, regions) }
  const operations = new Map(operationsOf(spec))
  const expected = rewrite(current, regions, (r) => {
    const notes = notesIn(r.content)
    if (r.kind._tag === "schema") return schemas.components[r.kind.schema] === undefined ? "" : renderSchema(schemas, r.kind.schema, r.kind.beyond, notes)
    const op = operations.get(`${r.kind.method} ${r.kind.path}`)
    return op === undefined ? "" : renderOperation(schemas, op, notes)
  })
  const anchors = missingAnchors(expected).map((anchor) => `${file} links #${anchor}, which no heading of the page has`)
  return { file, current, expected, problems: [...apiProblems(current, spec, schemas, regions), ...anchors] }
}
