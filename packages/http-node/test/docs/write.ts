/**
 * `pnpm docs:map` / `pnpm docs:api`: writes a generated page of docs/ from the code, then lists
 * what it could not mend (exit code 1 when there is any).
 * Run with `tsx --conditions=@wes/source` (the workspace packages from their sources).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { openApiDocument } from "./ApiSpec.js"
import { apiPage, architecturePage, type Page, ROOT } from "./Pages.js"

const pages: Record<string, () => Page> = { map: architecturePage, api: () => apiPage(openApiDocument()) }

const make = pages[process.argv[2] ?? ""]
if (make === undefined) {
  console.error(`usage: write.ts ${Object.keys(pages).join("|")}`)
  process.exit(2)
}
const page = make()
if (page.current === page.expected) {
  console.log(`${page.file} is up to date`)
} else {
  fs.writeFileSync(path.join(ROOT, page.file), page.expected)
  console.log(`wrote ${page.file}`)
}
for (const problem of page.problems) console.error(problem)
process.exitCode = page.problems.length > 0 ? 1 : 0
