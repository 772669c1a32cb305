/** What the fake's node classes share: their values' checks, input specs and ComfyUI's save paths. */
import type { FakeImage, FakeMask, InputSpec, NodeContext } from "./NodeTypes.js"
import { PyError } from "./Python.js"

/** Python's `sys.maxsize` (2**63 - 1; a double rounds it up by one). */
export const MAX_SIZE = 2 ** 63 - 1

export const isImage = (v: unknown): v is FakeImage =>
  typeof v === "object" && v !== null && (v as { kind?: unknown }).kind === "IMAGE"
export const isMask = (v: unknown): v is FakeMask =>
  typeof v === "object" && v !== null && (v as { kind?: unknown }).kind === "MASK"

export const pyTypeOf = (v: unknown): string =>
  v === null || v === undefined ? "NoneType" : typeof v === "string" ? "str" : typeof v === "number" ? "int" :
    typeof v === "boolean" ? "bool" : Array.isArray(v) ? "list" : "dict"

/** `v` as an image, or the error Python raises using something else as one. */
export const image = (v: unknown): FakeImage => {
  if (isImage(v)) return v
  throw new PyError("AttributeError", `'${pyTypeOf(v)}' object has no attribute 'shape'`)
}

export const mask = (v: unknown): FakeMask => {
  if (isMask(v)) return v
  throw new PyError("AttributeError", `'${pyTypeOf(v)}' object has no attribute 'reshape'`)
}

export const int = (d: number, min?: number, max?: number, extra?: Record<string, unknown>): InputSpec => ({
  type: "INT",
  default: d,
  ...(min === undefined ? {} : { min }),
  ...(max === undefined ? {} : { max }),
  step: 1,
  ...(extra === undefined ? {} : { extra })
})

export const combo = (options: ReadonlyArray<string>): InputSpec => ({ type: "COMBO", options: () => Promise.resolve(options) })

/** `compute_vars` of `folder_paths.get_save_image_path` (audio passes no size: 0 x 0). */
export const computeVars = (prefix: string, size: { readonly width: number; readonly height: number }): string => {
  const now = new Date()
  const two = (n: number) => String(n).padStart(2, "0")
  return prefix
    .replaceAll("%width%", String(size.width))
    .replaceAll("%height%", String(size.height))
    .replaceAll("%year%", String(now.getFullYear()))
    .replaceAll("%month%", two(now.getMonth() + 1))
    .replaceAll("%day%", two(now.getDate()))
    .replaceAll("%hour%", two(now.getHours()))
    .replaceAll("%minute%", two(now.getMinutes()))
    .replaceAll("%second%", two(now.getSeconds()))
}

/** `get_save_image_path` for `prefix` in the output (or temp) folder, its refusal raised as ComfyUI raises it. */
export const saveTarget = (
  ctx: NodeContext,
  type: "output" | "temp",
  prefix: string,
  size: { readonly width: number; readonly height: number }
) =>
  ctx.files.saveImagePath(type, computeVars(prefix, size)).catch((e: unknown) => {
    throw new PyError("Exception", e instanceof Error ? e.message : String(e))
  })
