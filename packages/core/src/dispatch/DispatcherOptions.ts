/**
 * Tuning of the dispatcher, and the retry policy built from it. Every value has a production
 * default; tests shrink the intervals. Each runner call has one timeout, the runner gateway's
 * own (runner-client's `requestTimeout`), so none is added here.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import * as Schedule from "effect/Schedule"
import { DEFAULT_MIN_FREE_DISK_BYTES } from "../domain/AgentHealth.js"

export interface DispatcherOptions {
  /** How often the dispatcher looks for runners with work it does not drive yet. */
  readonly scanInterval: Duration.Input
  /** How often a driver looks for claimable work without a wake-up (expired leases of dead instances). */
  readonly claimInterval: Duration.Input
  /** How often a driver reconciles its in-flight workflows with the runner. */
  readonly reconcileInterval: Duration.Input
  /** Lease on a claimed workflow, renewed while it is being submitted. */
  readonly claimLease: Duration.Input
  /**
   * Prompts kept on one runner at a time (being submitted, queued or running there). The rest
   * waits in WES in scheduling order, so this bounds how long one user's burst can hold up
   * another's workflow.
   */
  readonly concurrencyPerRunner: number
  /** How long a waiting workflow takes to rise one priority level (no starvation). */
  readonly priorityAging: Duration.Input
  /** Attempts on one runner before the workflow moves to another. */
  readonly submitAttempts: number
  /** First retry delay of a runner call; doubles per attempt up to `retryDelayMax`, with jitter. */
  readonly retryDelay: Duration.Input
  readonly retryDelayMax: Duration.Input
  /** Runners tried before a workflow fails with RunnerUnavailable. */
  readonly maxRunnersTried: number
  /**
   * How long a runner may stay unreachable before the workflows queued or running on it are given
   * up: `failed` with `RunnerLost`, or retried on another runner (LostRunner.ts).
   */
  readonly runnerLostAfter: Duration.Input
  /** A driver with no unfinished work for this long stops (closing the runner's WebSocket). */
  readonly idleAfter: Duration.Input
  /** Minimum time between two reads of the runner's queue for queue positions. */
  readonly queueRefreshInterval: Duration.Input
  /** How long a driver trusts its copy of the runner (endpoint, headers, status) between claims. */
  readonly runnerRefreshInterval: Duration.Input
  /**
   * Free disk, in bytes, an agent runner's agent must report for its driver to claim new work
   * (domain/AgentHealth.ts); below it the runner finishes what it has and waits.
   */
  readonly minFreeDiskBytes: number
}

export const defaultDispatcherOptions: DispatcherOptions = {
  scanInterval: Duration.seconds(2),
  claimInterval: Duration.seconds(1),
  reconcileInterval: Duration.seconds(5),
  claimLease: Duration.seconds(30),
  concurrencyPerRunner: 4,
  priorityAging: Duration.minutes(5),
  // About 30 s of retries per runner: long enough to ride out a ComfyUI restart.
  submitAttempts: 6,
  retryDelay: Duration.seconds(1),
  retryDelayMax: Duration.seconds(30),
  maxRunnersTried: 3,
  runnerLostAfter: Duration.minutes(10),
  idleAfter: Duration.seconds(30),
  queueRefreshInterval: Duration.millis(250),
  runnerRefreshInterval: Duration.seconds(1),
  minFreeDiskBytes: DEFAULT_MIN_FREE_DISK_BYTES
}

/**
 * Retries of a runner call: exponential from `retryDelay`, capped at `retryDelayMax`, each delay
 * jittered to 50-100 %, at most `submitAttempts - 1` retries.
 */
export const retrySchedule = (options: DispatcherOptions) =>
  Schedule.min([Schedule.exponential(options.retryDelay), Schedule.spaced(options.retryDelayMax)]).pipe(
    Schedule.modifyDelay(({ duration }) =>
      Effect.map(Random.nextBetween(0.5, 1), (factor) => Duration.millis(Duration.toMillis(duration) * factor))),
    Schedule.upTo({ times: Math.max(0, options.submitAttempts - 1) })
  )
