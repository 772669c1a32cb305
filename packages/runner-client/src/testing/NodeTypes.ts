/** The shape of a node class in the fake's catalogue: inputs, outputs, validation, behaviour. */
import type { FileStore } from "./Files.js"

/** A literal-or-link input as `INPUT_TYPES` declares it. */
export type InputSpec =
  | {
    readonly type: "INT" | "FLOAT"
    readonly default?: number
    readonly min?: number
    readonly max?: number
    readonly step?: number
    readonly extra?: Readonly<Record<string, unknown>>
  }
  | { readonly type: "STRING"; readonly default?: string; readonly multiline?: boolean }
  | { readonly type: "BOOLEAN"; readonly default?: boolean }
  /** A V1 combo: the option list is the type. */
  | {
    readonly type: "COMBO"
    readonly options: (files: FileStore) => Promise<ReadonlyArray<string>>
    readonly extra?: Readonly<Record<string, unknown>>
  }
  /** Link-only types (`IMAGE`, `MASK`, `*`, ...). */
  | { readonly type: string }

/** An image flowing between fake nodes: a solid colour, with its size and batch. */
export interface FakeImage {
  readonly kind: "IMAGE"
  readonly width: number
  readonly height: number
  readonly batch: number
  readonly color: number
}

/** A mask flowing between fake nodes. */
export interface FakeMask {
  readonly kind: "MASK"
  readonly width: number
  readonly height: number
  readonly batch: number
  readonly value: number
}

/** The UI dict a node returns (history `outputs[node]`). */
export type NodeUi = Readonly<Record<string, ReadonlyArray<unknown>>>

export interface NodeResult {
  readonly outputs: ReadonlyArray<unknown>
  readonly ui?: NodeUi
}

/** What a running node may do besides computing: files, progress (with optional previews), the prompt. */
export interface NodeContext {
  readonly files: FileStore
  readonly promptId: string
  readonly nodeId: string
  readonly prompt: Readonly<Record<string, unknown>>
  readonly extraPngInfo: unknown
  /** A progress-bar step: the interrupt check, `progress_state`, `progress` and an optional preview image. */
  readonly progress: (value: number, max: number, preview?: Buffer) => Promise<void>
  /** Waits (cancelled by a restart or close of the fake). */
  readonly sleep: (ms: number) => Promise<void>
  /** Whether every progress step should carry a preview image (the fake's `previews` option). */
  readonly previews: boolean
}

export interface NodeDef {
  readonly name: string
  readonly displayName: string
  readonly category: string
  readonly description: string
  readonly pythonModule: string
  readonly required: Readonly<Record<string, InputSpec>>
  readonly optional?: Readonly<Record<string, InputSpec>>
  readonly hidden?: Readonly<Record<string, string>>
  readonly outputs: ReadonlyArray<string>
  readonly outputNames?: ReadonlyArray<string>
  readonly outputNode: boolean
  /** `VALIDATE_INPUTS`: the inputs it receives (they skip the generic bound and combo checks) and its verdict. */
  readonly validate?: {
    readonly inputs: ReadonlyArray<string>
    readonly check: (values: Readonly<Record<string, unknown>>, files: FileStore) => Promise<true | string>
  }
  /** `IS_CHANGED`: joins the cache signature (a fresh value every time means never cached). */
  readonly isChanged?: (values: Readonly<Record<string, unknown>>, files: FileStore) => Promise<unknown>
  readonly run: (inputs: Readonly<Record<string, unknown>>, ctx: NodeContext) => Promise<NodeResult>
}
