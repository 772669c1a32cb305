// Probe only: counts Effect ops by kind, and samples continuations by source.
import { createRequire } from "node:module"
import { pathToFileURL } from "node:url"
export const opStats = { total: 0, byOp: {} as Record<string, number>, bySrc: new Map<string, number>(), trace: undefined as Array<string> | undefined }
const describe = (key: string, op: Record<string, unknown>) => {
  const f = key === "Commit" ? op["commit"] : key === "OnSuccess" || key === "OnFailure" || key === "OnSuccessAndFailure" ? op["effect_instruction_i1"] ?? op["effect_instruction_i2"] : op["effect_instruction_i0"]
  return typeof f === "function" ? key + " " + f.toString().slice(0, 160).replace(/\s+/g, " ") : key
}
export const installOpCounter = async () => {
  const req = createRequire(import.meta.url)
  const base = req.resolve("effect").replace(/dist\/cjs\/index\.js$/, "dist/esm/")
  const mod = await import(pathToFileURL(base + "internal/fiberRuntime.js").href)
  const proto = mod.FiberRuntime.prototype
  let i = 0
  const every = Number(process.env["OPS_EVERY"] ?? 20)
  for (const key of ["Sync", "Success", "Failure", "OnSuccess", "OnFailure", "OnSuccessAndFailure", "Async", "Yield", "While", "Iterator", "WithRuntime", "UpdateRuntimeFlags", "Tag", "Left", "Right", "Some", "None", "Commit", "OnStep"]) {
    const orig = proto[key]
    if (typeof orig !== "function") continue
    proto[key] = function(this: unknown, op: Record<string, unknown>) {
      opStats.total++
      opStats.byOp[key] = (opStats.byOp[key] ?? 0) + 1
      if (opStats.trace !== undefined && opStats.trace.length < 5000) opStats.trace.push(describe(key, op))
      if (++i % every === 0) {
        const src = describe(key, op)
        opStats.bySrc.set(src, (opStats.bySrc.get(src) ?? 0) + every)
      }
      return orig.call(this, op)
    }
  }
}
