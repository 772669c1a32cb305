/** What a benchmark is: an id, a title, and a run at a size that yields table rows. */
import type { Row } from "./report.js"

export type Size = "tiny" | "full"

export interface Benchmark {
  readonly id: string
  readonly title: string
  readonly run: (size: Size) => Promise<ReadonlyArray<Row>>
}

/** A smoke workflow for the fake runner. */
export const smokeWorkflow = (color = 255) => ({
  "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color } },
  "2": { class_type: "ImageInvert", inputs: { image: ["1", 0] } },
  "3": { class_type: "SaveImage", inputs: { images: ["2", 0], filename_prefix: "bench/run" } }
})

/** Alternates `rounds` of A and B (so machine drift hits both), collecting each side's results. */
export const alternate = async <A, B>(rounds: number, a: () => Promise<A>, b: () => Promise<B>) => {
  const as: Array<A> = []
  const bs: Array<B> = []
  for (let i = 0; i < rounds; i++) {
    if (i % 2 === 0) {
      as.push(await a())
      bs.push(await b())
    } else {
      bs.push(await b())
      as.push(await a())
    }
  }
  return { a: as, b: bs }
}

/** A workflow of about `bytes` bytes of JSON (padding in `_meta`, which ComfyUI ignores). */
export const paddedWorkflow = (bytes: number, color = 255) => {
  const base = smokeWorkflow(color)
  const pad = Math.max(0, bytes - JSON.stringify(base).length - 40)
  return { ...base, "3": { ...base["3"], _meta: { title: "x".repeat(pad) } } }
}

/** A workflow the fake finishes at once with no file to copy: PrimitiveString -> PreviewAny. */
export const textWorkflow = (text: string) => ({
  "1": { class_type: "PrimitiveString", inputs: { value: text } },
  "2": { class_type: "PreviewAny", inputs: { source: ["1", 0] } }
})

/** A FakeSleep job: `steps` progress steps over `seconds`, then a PreviewAny output. */
export const sleepWorkflow = (seconds: number, steps: number, tag: number) => ({
  "1": { class_type: "FakeSleep", inputs: { seconds, steps, value: tag } },
  "2": { class_type: "PreviewAny", inputs: { source: ["1", 0] } }
})

/** Wall-clock milliseconds with sub-millisecond precision, comparable across processes. */
export const now = (): number => performance.timeOrigin + performance.now()

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
