/**
 * When a delivery is tried again: what counts as retryable (no answer, a timeout, 429, 5xx; never
 * another 4xx nor a refused address), and the backoff, as a Schedule: exponential from a base
 * delay, doubled each time, capped, with jitter. Attempts are durable (another instance may make
 * the next one), so the n-th delay is read off the schedule rather than kept in a running fiber.
 */
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Pull from "effect/Pull"
import * as Schedule from "effect/Schedule"
import type { DeliveryOutcome } from "./Webhook.js"

export interface RetryOptions {
  /** The first delay (default 5 s). */
  readonly base: Duration.Input
  /** No delay is longer (default 1 h). */
  readonly cap: Duration.Input
}

export const defaultRetryOptions: RetryOptions = { base: Duration.seconds(5), cap: Duration.hours(1) }

/**
 * Exponential backoff (factor 2) from `base`, capped at `cap`, each delay jittered by 0.8-1.2;
 * its outputs are the delays. (`Schedule.min` of one schedule outputs that schedule's delays.)
 */
export const webhookRetrySchedule = (options: RetryOptions = defaultRetryOptions): Schedule.Schedule<Duration.Duration> =>
  Schedule.min([Schedule.jittered(Schedule.min([Schedule.exponential(options.base, 2), Schedule.spaced(options.cap)]))])

/** The delay before attempt `failures + 1`, after `failures` failed attempts (at least 1). */
export const webhookRetryDelay = (failures: number, options: RetryOptions = defaultRetryOptions): Effect.Effect<Duration.Duration> =>
  Effect.flatMap(Schedule.toStep(webhookRetrySchedule(options)), (step) => {
    // The schedule's steps, one per failure; the last delay is the answer (the schedule never ends).
    const next = (left: number, last: Duration.Duration): Effect.Effect<Duration.Duration> =>
      left === 0
        ? Effect.succeed(last)
        : step(0, undefined).pipe(
          Effect.flatMap(([, delay]) => next(left - 1, delay)),
          Pull.catchDone(() => Effect.succeed(last))
        )
    return next(Math.max(1, failures), Duration.fromInputUnsafe(options.base))
  })

/** What a receiver's answer (or its absence) means. */
export type SendResult =
  | { readonly _tag: "Answered"; readonly status: number; readonly body: string }
  | { readonly _tag: "NoAnswer"; readonly error: string }
  /** Never sent, and sending again will not help (a refused address, no signing secret). */
  | { readonly _tag: "Refused"; readonly error: string }

export const isSuccess = (r: SendResult): boolean => r._tag === "Answered" && r.status >= 200 && r.status < 300

/** Worth another try: no answer (network error, timeout), 429 or 5xx. */
export const isRetryable = (r: SendResult): boolean =>
  r._tag === "NoAnswer" || (r._tag === "Answered" && (r.status === 429 || r.status >= 500))

/** The outcome of an attempt: delivered, retried after the schedule's delay if before `expiresAt`, or failed. */
export const outcomeOf = (
  result: SendResult,
  failures: number,
  now: DateTime.Utc,
  expiresAt: DateTime.Utc,
  options: RetryOptions = defaultRetryOptions
): Effect.Effect<DeliveryOutcome> =>
  isSuccess(result)
    ? Effect.succeed({ _tag: "Delivered" })
    : !isRetryable(result)
    ? Effect.succeed({ _tag: "Failed" })
    : Effect.map(webhookRetryDelay(failures, options), (delay): DeliveryOutcome => {
      const at = DateTime.addDuration(now, delay)
      return DateTime.isGreaterThan(at, expiresAt) ? { _tag: "Failed" } : { _tag: "RetryAt", at }
    })
