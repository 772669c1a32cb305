/**
 * ComfyUI's `PromptQueue` (execution.py): a min-heap of `[number, prompt_id, prompt,
 * extra_data, outputs]` items managed like Python's `heapq`, the running item, and the
 * in-memory history in completion order.
 */

/** A queue item as `/queue` shows it (5 elements). */
export type QueueItem = readonly [
  number: number,
  promptId: string,
  prompt: Record<string, unknown>,
  extraData: Record<string, unknown>,
  outputs: ReadonlyArray<string>
]

/** Raised when two items compare equal on number and prompt_id (Python then compares dicts: TypeError). */
export class UnorderableItems extends Error {}

const less = (a: QueueItem, b: QueueItem): boolean => {
  if (a[0] !== b[0]) return a[0] < b[0]
  if (a[1] !== b[1]) return a[1] < b[1]
  throw new UnorderableItems("'<' not supported between instances of 'dict' and 'dict'")
}

/** A history entry exactly as `/history` returns it. */
export interface HistoryEntry {
  readonly prompt: QueueItem
  readonly outputs: Record<string, unknown>
  readonly status: {
    readonly status_str: "success" | "error"
    readonly completed: boolean
    readonly messages: ReadonlyArray<readonly [string, Record<string, unknown>]>
  } | null
  readonly meta: Record<string, unknown>
}

export class PromptQueue {
  /** The raw heap array (what `/queue` lists as pending). */
  heap: Array<QueueItem> = []
  running: QueueItem | undefined
  readonly history = new Map<string, HistoryEntry>()

  constructor(private readonly maxHistory: number) {}

  private siftDown(start: number, pos: number): void {
    const item = this.heap[pos]!
    while (pos > start) {
      const parent = (pos - 1) >> 1
      if (less(item, this.heap[parent]!)) {
        this.heap[pos] = this.heap[parent]!
        pos = parent
        continue
      }
      break
    }
    this.heap[pos] = item
  }

  private siftUp(pos: number): void {
    const end = this.heap.length
    const start = pos
    const item = this.heap[pos]!
    let child = 2 * pos + 1
    while (child < end) {
      const right = child + 1
      if (right < end && !less(this.heap[child]!, this.heap[right]!)) child = right
      this.heap[pos] = this.heap[child]!
      pos = child
      child = 2 * pos + 1
    }
    this.heap[pos] = item
    this.siftDown(start, pos)
  }

  /** `heapq.heappush`: the item is appended before sifting, so it stays queued even when sifting throws. */
  push(item: QueueItem): void {
    this.heap.push(item)
    this.siftDown(0, this.heap.length - 1)
  }

  /** `heapq.heappop` into the running slot. */
  take(): QueueItem | undefined {
    const last = this.heap.pop()
    if (last === undefined) return undefined
    let item = last
    if (this.heap.length > 0) {
      item = this.heap[0]!
      this.heap[0] = last
      this.siftUp(0)
    }
    this.running = item
    return item
  }

  /**
   * Removes the first pending item with this id (then re-heapifies). Returns how many `status`
   * broadcasts ComfyUI makes for it: 0 when not found, 2 for the only pending item (it wipes the
   * queue, which broadcasts, then broadcasts again), else 1.
   */
  delete(promptId: string): number {
    const i = this.heap.findIndex((item) => item[1] === promptId)
    if (i < 0) return 0
    const only = this.heap.length === 1
    this.heap.splice(i, 1)
    for (let k = (this.heap.length >> 1) - 1; k >= 0; k--) this.siftUp(k)
    return only ? 2 : 1
  }

  clear(): void {
    this.heap = []
  }

  /** `queue_remaining`: pending plus running. */
  remaining(): number {
    return this.heap.length + (this.running === undefined ? 0 : 1)
  }

  /** `task_done`: records the entry (dropping the oldest beyond the cap) and frees the running slot. */
  done(entry: HistoryEntry): void {
    if (this.history.size > this.maxHistory) {
      const oldest = this.history.keys().next()
      if (oldest.done !== true) this.history.delete(oldest.value)
    }
    // Like a Python dict, a reused id keeps its old position.
    this.history.set(entry.prompt[1], entry)
    this.running = undefined
  }

  /** `get_history(max_items, offset)` over all entries, oldest first. */
  historyPage(maxItems: number | undefined, offset: number): Record<string, HistoryEntry> {
    const out: Record<string, HistoryEntry> = {}
    let start = offset
    if (start < 0 && maxItems !== undefined) start = this.history.size - maxItems
    let i = 0
    let n = 0
    for (const [id, entry] of this.history) {
      if (i >= start) {
        out[id] = entry
        n++
        if (maxItems !== undefined && n >= maxItems) break
      }
      i++
    }
    return out
  }

  /** Forgets everything (a restart). */
  reset(): void {
    this.heap = []
    this.running = undefined
    this.history.clear()
  }
}
