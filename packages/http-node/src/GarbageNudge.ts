/**
 * Keeps dropped byte buffers from piling up (issue 33's bound: RSS grows at most 64 MB while a
 * gigabyte passes each way). V8 frees an ArrayBuffer's memory only in a collection, and starts one
 * for buffers alone only after some 64 MB of them were allocated since the last (its young
 * backing-store trigger, not configurable). The paths that cannot reuse a buffer allocate one per
 * chunk: node's HTTP parser copies each read of a request body, undici hands over each socket read
 * of a runner's answer, the PostgreSQL driver each row. A large transfer alone then holds up to
 * that much garbage: 50-62 MB measured on the runner copies of a 1 GiB input and output.
 *
 * So `wes serve` looks every 10 ms at V8's external memory (array buffers and the like), and when
 * it grew by 8 MB since the last collection it asks V8 for a young-generation collection (a
 * scavenge: about a millisecond; the dropped buffers are young), which frees them. A look costs a
 * microsecond (`getHeapStatistics`); a server whose buffers do not grow never collects this way.
 * V8's `gc` function is exposed at start (`--expose-gc` set from inside); where that is not
 * possible the nudge stays off and the server runs as without it.
 */
import * as v8 from "node:v8"
import * as vm from "node:vm"

/** Looks at the external memory this often, in milliseconds. */
const INTERVAL_MS = 10
/** Growth of the external memory since the last collection that asks for one. */
const GROWTH_BYTES = 8 * 1024 * 1024

type Gc = (options: { readonly type: "minor"; readonly execution: "sync" }) => void

/** V8's `gc` function, exposed now; none when it cannot be. */
const exposeGc = (): Gc | undefined => {
  try {
    v8.setFlagsFromString("--expose-gc")
    const gc: unknown = vm.runInNewContext("gc")
    return typeof gc === "function" ? (gc as Gc) : undefined
  } catch {
    return undefined
  }
}

/** Starts the nudge for the life of the process (its timer keeps no process alive); false when V8 offers no `gc`. */
export const startGarbageNudge = (): boolean => {
  const gc = exposeGc()
  if (gc === undefined) return false
  const external = () => v8.getHeapStatistics().external_memory
  let last = external()
  setInterval(() => {
    const now = external()
    if (now - last >= GROWTH_BYTES) {
      gc({ type: "minor", execution: "sync" })
      last = external()
    } else if (now < last) {
      // Collected meanwhile: growth counts from here.
      last = now
    }
  }, INTERVAL_MS).unref()
  return true
}
