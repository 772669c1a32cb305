/**
 * A wall clock a test moves forward, for a real server (startServer's `clock`): what reads the
 * time (a token's expiry, a rate-limit window) sees the jump at once, while timers (Clock.sleep)
 * keep running on real time, so everything else in the server works as in production. A server
 * under TestClock would instead stop every timer it starts until the test moved the clock.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

export interface MovableClock {
  /** The server's clock: real time plus every `advance` so far. */
  readonly layer: Layer.Layer<never>
  /** Moves the clock forward by `duration`, as if that much time had passed. */
  readonly advance: (duration: Duration.Input) => void
}

export const movableClock = (): MovableClock => {
  const real = Clock.Clock.defaultValue()
  let offsetMillis = 0
  const millis = () => real.currentTimeMillisUnsafe() + offsetMillis
  const nanos = () => real.currentTimeNanosUnsafe() + BigInt(offsetMillis) * 1_000_000n
  const monotonic = () => real.monotonicTimeNanosUnsafe() + BigInt(offsetMillis) * 1_000_000n
  const clock: Clock.Clock = {
    currentTimeMillisUnsafe: millis,
    currentTimeMillis: Effect.sync(millis),
    currentTimeNanosUnsafe: nanos,
    currentTimeNanos: Effect.sync(nanos),
    monotonicTimeNanosUnsafe: monotonic,
    monotonicTimeNanos: Effect.sync(monotonic),
    sleep: (duration) => real.sleep(duration)
  }
  return {
    layer: Layer.succeed(Clock.Clock, clock),
    advance: (duration) => {
      offsetMillis += Math.round(Duration.toMillis(duration))
    }
  }
}
