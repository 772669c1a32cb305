/**
 * Relative links from a page in docs/ to files of the repository: which ones point nowhere, and
 * where a file that moved inside its package is now (found by its name).
 */
import * as fs from "node:fs"
import * as path from "node:path"

const LINK = /\]\((\.\.\/[^)#\s]+)(#[^)\s]*)?\)/g

/** The relative links of `page` (in `docsDir`) whose target does not exist. */
export const brokenLinks = (page: string, docsDir: string): ReadonlyArray<string> =>
  [...new Set([...page.matchAll(LINK)].map((m) => m[1]!))].filter((target) => !fs.existsSync(path.resolve(docsDir, target)))

const filesNamed = (dir: string, name: string): ReadonlyArray<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (e.name === "node_modules" || e.name === "dist") return []
    const full = path.join(dir, e.name)
    if (e.isDirectory()) return filesNamed(full, name)
    return e.name === name ? [full] : []
  })

/**
 * `page` with each broken link into packages/<name>/ pointed at the one file of that name in the
 * same package, when there is exactly one (a file moved between folders). Others stay broken.
 */
export const relink = (page: string, docsDir: string): string => {
  let out = page
  for (const target of brokenLinks(page, docsDir)) {
    const match = /^((?:\.\.\/)+packages\/[^/]+)\/.*?([^/]+)$/.exec(target)
    if (match === null) continue
    const pkg = path.resolve(docsDir, match[1]!)
    if (!fs.existsSync(pkg)) continue
    const found = filesNamed(pkg, match[2]!)
    if (found.length !== 1) continue
    const moved = path.relative(docsDir, found[0]!).split(path.sep).join("/")
    out = out.split(`](${target})`).join(`](${moved})`).split(`](${target}#`).join(`](${moved}#`)
  }
  return out
}
