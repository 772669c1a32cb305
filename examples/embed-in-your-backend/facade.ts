/**
 * The same as server.ts from plain async/await code: `createWes` from @wes/core wraps the Effect
 * services in promises. Nothing here needs to know Effect; the store and the runner client are
 * passed in as ready-made values.
 *
 * Run: `pnpm --filter @wes/example-embed-in-your-backend facade` (COMFYUI_URL, DATABASE_URL, OUT).
 */
import { createWes, type WesWorkflowEvent } from "@wes/core"
import { RunnerGatewayNode } from "@wes/runner-client"
import { writeFile } from "node:fs/promises"
import { pathToFileURL } from "node:url"
import { comfyuiFromEnv } from "./comfyui.js"
import { storeLayer } from "./wes.js"
import { swatchWorkflow } from "./workflow.js"

export interface SwatchOptions {
  readonly comfyuiUrl: string
  /** Packed RGB, e.g. 0xff8800. */
  readonly color: number
  readonly size: number
  /** PostgreSQL instead of memory (`@wes/storage-pg`). */
  readonly databaseUrl?: string | undefined
  readonly onEvent?: (event: WesWorkflowEvent) => void
}

/** Starts WES, runs one swatch workflow to completion, returns its PNG, and stops WES. */
export const generateSwatch = async (options: SwatchOptions) => {
  const wes = await createWes({
    // MemoryStoreLive, or PgStoreLive({ url: Redacted.make(DATABASE_URL) }): see wes.ts.
    store: storeLayer(options.databaseUrl),
    gateway: RunnerGatewayNode()
  })
  try {
    const user = await wes.createUser({ tier: "pro" })
    await wes.registerRunner(user, { name: "comfyui", endpoint: options.comfyuiUrl })
    const workflow = await wes.createWorkflow(user, {
      name: "swatch",
      workflow_json: swatchWorkflow,
      params: { $color: options.color, $size: options.size }
    })
    for await (const event of wes.follow(user, workflow.id)) options.onEvent?.(event)

    const finished = await wes.getWorkflow(user, workflow.id)
    if (finished.status !== "completed") throw new Error(`workflow ${finished.status}: ${finished.exception_message}`)
    const [first] = await wes.outputs(user, workflow.id)
    if (first === undefined) throw new Error("the workflow produced no file")
    const file = await wes.downloadOutput(user, workflow.id, first.id)
    return { workflow: finished, file }
  } finally {
    await wes.close()
  }
}

const main = async () => {
  const comfyui = await comfyuiFromEnv()
  try {
    const { file, workflow } = await generateSwatch({
      comfyuiUrl: comfyui.url,
      color: 0xff8800,
      size: 128,
      databaseUrl: process.env["DATABASE_URL"],
      onEvent: (e) => console.log(e.type, JSON.stringify(e.data))
    })
    const out = process.env["OUT"] ?? "swatch.png"
    await writeFile(out, file.bytes)
    console.log(`workflow ${workflow.id} ${workflow.status}: ${file.output.filename} (${file.content_type}, ${file.size} bytes) -> ${out}`)
  } catch (e) {
    // WES's errors are typed: `_tag` says which (ValidationError, NoEligibleRunner, WorkflowNotFound, ...).
    if (e instanceof Error && "_tag" in e) console.error(`${String(e._tag)}: ${e.message}`)
    else console.error(e)
    process.exitCode = 1
  } finally {
    await comfyui.close()
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) void main()
