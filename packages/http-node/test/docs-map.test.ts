/**
 * docs/architecture.md opens with a map drawn from the code (`pnpm docs:map`), and its path of one
 * workflow names the files that handle it by links that must lead somewhere.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { brokenLinks, relink } from "./docs/Links.js"
import { architecturePage } from "./docs/Pages.js"
import { notesIn } from "./docs/Tables.js"
import { corePartsTable, workspaceMap } from "./docs/WorkspaceMap.js"

const roots: Array<string> = []
afterAll(() => { for (const root of roots) fs.rmSync(root, { recursive: true, force: true }) })

/** A repository with `files` (path -> content) in a fresh directory. */
const repo = (files: Record<string, string>): string => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "wes-docs-map-"))
  roots.push(root)
  for (const [file, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true })
    fs.writeFileSync(path.join(root, file), content)
  }
  return root
}

describe("docs/architecture.md", () => {
  it("opens with the map the code draws (else: run pnpm docs:map), and links only to files that exist", () => {
    const page = architecturePage()
    expect(page.problems).toEqual([])
    expect(page.current, "docs/architecture.md's map is not what the code draws: run pnpm docs:map").toBe(page.expected)
    expect(page.current.indexOf("```mermaid\nflowchart")).toBeLessThan(page.current.indexOf("\n## "))
  })

  it("walks one workflow through the code, naming each file by a link", () => {
    const page = architecturePage().current
    const start = page.indexOf("## The path of one workflow")
    expect(start).toBeGreaterThan(0)
    const walk = page.slice(start, page.indexOf("\n## ", start + 1))
    expect(walk.match(/^\d+\. /gm)?.length).toBeGreaterThanOrEqual(8)
    // Every file it names is a link (checked to exist above), not text that could go stale.
    const unlinked = walk.replace(/\[[^\]]*\]\([^)]*\)/g, "").match(/\b\w+\.ts\b/g) ?? []
    expect(unlinked, "the path of one workflow names these files without a link to them").toEqual([])
    for (const pkg of ["api", "http-node", "core", "storage-pg", "runner-client"]) expect(walk).toContain(`](../packages/${pkg}/src/`)
  })
})

describe("the map's generator", () => {
  const root = repo({
    "packages/core/package.json": JSON.stringify({ name: "@wes/core" }),
    "packages/core/src/index.ts": `export * from "./usecases/Create.js"\n`,
    "packages/core/src/Facade.ts": `import { create } from "./usecases/Create.js"\nexport const facade = create\n`,
    "packages/core/src/domain/Workflow.ts": `export type Workflow = { readonly id: string }\n`,
    "packages/core/src/ports/Store.ts": `import type { Workflow } from "../domain/Workflow.js"\nexport type Store = (w: Workflow) => void\n`,
    "packages/core/src/usecases/Create.ts": `import type { Store } from "../ports/Store.js"\nimport { type Workflow } from "../domain/Workflow.js"\nexport const create = (s: Store, w: Workflow) => s(w)\n`,
    "packages/store/package.json": JSON.stringify({ name: "@wes/store", dependencies: { "@wes/core": "workspace:^", effect: "4" } }),
    "packages/web/package.json": JSON.stringify({ name: "@wes/web", dependencies: { "@wes/store": "workspace:^" }, devDependencies: { "@wes/core": "workspace:^" } })
  })

  it("draws the packages, their @wes dependencies, core's folders and files, and the imports between them", () => {
    expect(workspaceMap(root).split("\n")).toEqual([
      "```mermaid",
      "flowchart LR",
      "  pkg_store[\"@wes/store\"]",
      "  pkg_web[\"@wes/web\"]",
      "  subgraph pkg_core[\"@wes/core: packages/core/src\"]",
      "    core_Facade_ts[\"Facade.ts\"]",
      "    core_domain[\"domain/\"]",
      "    core_ports[\"ports/\"]",
      "    core_usecases[\"usecases/\"]",
      "  end",
      "  pkg_store --> pkg_core",
      "  pkg_web --> pkg_store",
      "  pkg_web -.-> pkg_core",
      "  core_Facade_ts --> core_usecases",
      "  core_ports --> core_domain",
      "  core_usecases --> core_domain",
      "  core_usecases --> core_ports",
      "```"
    ])
  })

  it("lists core's parts with what the page says each holds, and names those it says nothing of", () => {
    const notes = notesIn("| part | what it holds |\n|---|---|\n| `domain/` | the rules |\n| `shared/` | gone since |\n")
    const { text, undescribed } = corePartsTable(root, notes)
    expect(text.split("\n")).toEqual([
      "| part | what it holds |",
      "|---|---|",
      "| `Facade.ts` | |",
      "| `domain/` | the rules |",
      "| `ports/` | |",
      "| `usecases/` | |"
    ])
    expect(undescribed).toEqual(["Facade.ts", "ports/", "usecases/"])
  })

  it("follows a file that moved to another folder of its package, and leaves a link to a deleted one broken", () => {
    const docs = path.join(root, "docs")
    const page = "[Create.ts](../packages/core/src/workflows/Create.ts), [Gone.ts](../packages/core/src/Gone.ts)"
    expect(brokenLinks(page, docs)).toEqual(["../packages/core/src/workflows/Create.ts", "../packages/core/src/Gone.ts"])
    const mended = relink(page, docs)
    expect(mended).toBe("[Create.ts](../packages/core/src/usecases/Create.ts), [Gone.ts](../packages/core/src/Gone.ts)")
    expect(brokenLinks(mended, docs)).toEqual(["../packages/core/src/Gone.ts"])
  })
})
