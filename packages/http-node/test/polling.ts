/**
 * How the tests wait: for a condition, never for a span of time. `poll` checks again and again
 * until what it checks holds, and is over as soon as it does; past its deadline it fails, naming
 * what it waited for. Besides deadlines, the pause between two checks is the only timer the tests
 * set for themselves; any other real time is a real process's (crash, outage, restart, soak,
 * faults, CLI), each marked `// real time:` with its reason.
 */
import * as Effect from "effect/Effect"

type What = string | (() => string)

const describe = (what: What) => (typeof what === "string" ? what : what())

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Checks `check` every `everyMs` until it gives a value other than undefined; fails after `timeoutMs` naming `what`. */
export const poll = async <A>(
  what: What,
  check: () => Promise<A | undefined> | A | undefined,
  timeoutMs = 15_000,
  everyMs = 25
): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${describe(what)}`)
    await pause(everyMs)
  }
}

/** Waits until `condition` holds (see `poll`). */
export const until = async (what: What, condition: () => Promise<boolean> | boolean, timeoutMs = 15_000, everyMs = 25): Promise<void> => {
  await poll(what, async () => ((await condition()) ? true : undefined), timeoutMs, everyMs)
}

/**
 * `until` for an Effect test: runs `condition` until it gives true, on real time whatever clock
 * the test runs on (what it waits for is done by node: stream callbacks, sockets), checking every
 * millisecond; past `timeoutMs` the test dies naming `what`.
 */
export const eventually = (what: What, condition: Effect.Effect<boolean>, timeoutMs = 5_000): Effect.Effect<void> =>
  Effect.gen(function*() {
    const deadline = Date.now() + timeoutMs
    while (!(yield* condition)) {
      if (Date.now() > deadline) return yield* Effect.die(new Error(`timed out after ${timeoutMs} ms waiting for ${describe(what)}`))
      yield* Effect.promise(() => pause(1))
    }
  })

/** What `promise` gives, or a failure naming `what` if it has not settled within `timeoutMs`. */
export const within = <A>(what: What, promise: Promise<A>, timeoutMs: number): Promise<A> => {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${describe(what)}`)), timeoutMs)
  })
  return Promise.race([promise, late]).finally(() => clearTimeout(timer))
}
