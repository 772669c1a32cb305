/**
 * The team's own workflow, in ComfyUI API format (what "Export (API)" saves): a solid colour
 * swatch. `$text(color, 0)` and `$text(size, 256)` are WES placeholders, filled from the
 * parameters `$color` and `$size` of each request. Core ComfyUI nodes only, so it runs on any
 * ComfyUI (and on the simulated one).
 */
export const swatchWorkflow = {
  "1": {
    class_type: "EmptyImage",
    inputs: { width: "$text(size, 256)", height: "$text(size, 256)", batch_size: 1, color: "$text(color, 0)" }
  },
  "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "swatches/swatch" } }
}

/** `#ff8800` or `ff8800` -> 0xff8800 (EmptyImage's `color` is a packed RGB integer). */
export const parseColor = (value: unknown): number | undefined => {
  if (typeof value === "number" && Number.isInteger(value) && value >= 0 && value <= 0xffffff) return value
  if (typeof value !== "string" || !/^#?[0-9a-f]{6}$/i.test(value)) return undefined
  return Number.parseInt(value.replace("#", ""), 16)
}
