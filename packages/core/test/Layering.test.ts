/**
 * core's folders depend one way (domain <- ports <- usecases <- dispatch): the lint rule in
 * eslint.config.js refuses a back arrow. Linted here as `pnpm lint` lints, on the real config.
 */
import { ESLint } from "eslint"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const root = fileURLToPath(new URL("../../..", import.meta.url))
const eslint = new ESLint({ cwd: root })

/** The import-rule messages for `source` linted as if it were the file at `path` (from the repository root). */
const importErrors = async (path: string, source: string) => {
  const [result] = await eslint.lintText(source, { filePath: `${root}/${path}` })
  return (result?.messages ?? []).filter((m) => m.ruleId === "no-restricted-imports").map((m) => m.message)
}

describe("core's layering lint", () => {
  it.each([
    ["packages/core/src/domain/Probe.ts", "../ports/WorkflowRepository.js", "core/src/domain/ depends on nothing but itself"],
    ["packages/core/src/domain/Probe.ts", "../dispatch/Dispatcher.js", "core/src/domain/"],
    ["packages/core/src/ports/Probe.ts", "../usecases/Scheduler.js", "core/src/ports/ depends on domain and itself"],
    ["packages/core/src/usecases/Probe.ts", "../dispatch/Dispatcher.js", "core/src/usecases/"],
    ["packages/core/src/usecases/workflow/Probe.ts", "../../dispatch/Claim.js", "core/src/usecases/"],
    ["packages/core/src/dispatch/Probe.ts", "../UseCases.js", "core/src/dispatch/"],
    ["packages/core/src/dispatch/Probe.ts", "../testing/Fixtures.js", "core/src/dispatch/"]
  ])("refuses %s importing %s", async (path, target, message) => {
    const errors = await importErrors(path, `import * as M from "${target}"\nexport const m = M\n`)
    expect(errors).toHaveLength(1)
    expect(errors[0]).toContain(message)
  })

  it.each([
    ["packages/core/src/domain/Probe.ts", "./Workflow.js"],
    ["packages/core/src/ports/Probe.ts", "../domain/Workflow.js"],
    ["packages/core/src/usecases/Probe.ts", "../ports/WorkflowRepository.js"],
    ["packages/core/src/usecases/workflow/Probe.ts", "../../domain/Workflow.js"],
    ["packages/core/src/dispatch/Probe.ts", "../usecases/Lifecycle.js"],
    ["packages/core/src/UseCases.ts", "./dispatch/Dispatcher.js"]
  ])("lets %s import %s", async (path, target) => {
    expect(await importErrors(path, `import * as M from "${target}"\nexport const m = M\n`)).toEqual([])
  })

  it("refuses anything but effect in core", async () => {
    const errors = await importErrors("packages/core/src/usecases/Probe.ts", `import * as M from "node:fs"\nexport const m = M\n`)
    expect(errors).toEqual(["'node:fs' import is restricted from being used by a pattern. @wes/core may import `effect` and its own modules only."])
  })
})
