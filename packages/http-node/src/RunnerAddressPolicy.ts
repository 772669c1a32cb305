/**
 * The default (unless `WES_DEV` or `WES_RUNNER_ALLOW_PRIVATE=true`): user-owned runner endpoints
 * may not point into the server's own network (SSRF). An endpoint whose host is, or resolves to, a private,
 * loopback, link-local, unspecified (or multicast / reserved) address is refused: with a 400 when
 * a runner is created or its endpoint changes (`denyPrivateProbe`), and at every connection to the
 * runner while dispatching, since DNS answers can change after the check: `wes serve` gives
 * RunnerGatewayNode the `runnerGuard`, whose connections resolve a name once and go to the
 * address they checked (GuardedConnect.ts in @wes/runner-client). `denyPrivateGateway` checks
 * before each call instead, for a gateway that cannot guard its own connections (a name that
 * answers differently the second time passes it). Managed runners (the operator's own) are not
 * restricted.
 */
import {
  type RunnerEvent,
  RunnerGateway,
  RunnerProbe,
  RunnerProbeFailed,
  type RunnerTarget,
  RunnerUnreachable
} from "@wes/core"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import {
  type AddressGuard,
  isPrivateAddress,
  type RefusalWords,
  refusalMessages,
  type Resolver,
  systemResolver,
  unbracket
} from "@wes/runner-client"
import * as net from "node:net"

export const ALLOW_PRIVATE_SETTING = "WES_RUNNER_ALLOW_PRIVATE"
const FIX = `the server's operator can allow such endpoints with ${ALLOW_PRIVATE_SETTING}=true`

export { isPrivateAddress, type RefusalWords, type Resolver, systemResolver }

const RUNNER_WORDS: RefusalWords = { url: "runner endpoint", host: "runner endpoint host", refused: "runner endpoint", fix: FIX }

/**
 * Why `url` is refused, or undefined when every address its host resolves to is public (runner
 * endpoints here; webhook URLs in WebhookSenderNode.ts, with their own words).
 */
export const refusal = async (url: string, resolve: Resolver, words: RefusalWords = RUNNER_WORDS): Promise<string | undefined> => {
  const say = refusalMessages(words)
  let host: string
  try {
    host = unbracket(new URL(url).hostname)
  } catch {
    return say.invalid
  }
  let addresses: ReadonlyArray<string>
  try {
    addresses = net.isIP(host) !== 0 ? [host] : await resolve(host)
  } catch {
    return say.unresolved(host)
  }
  if (addresses.length === 0) return say.empty(host)
  return addresses.some(isPrivateAddress) ? say.denied(host) : undefined
}

/** The guard of user runners' connections (RunnerGatewayNode's `guard`), in the runner's words. */
export const runnerGuard = (resolve?: Resolver, denied?: (address: string) => boolean): AddressGuard => ({ words: RUNNER_WORDS, resolve, denied })

/** Checks a user runner's endpoint (managed runners pass). */
const check = (resolve: Resolver) => (runner: RunnerTarget): Effect.Effect<void, string> =>
  runner.kind === "managed"
    ? Effect.void
    : Effect.flatMap(Effect.promise(() => refusal(runner.endpoint, resolve)), (reason) => reason === undefined ? Effect.void : Effect.fail(reason))

/** The probe, refusing denied endpoints with a 400 first (also when `WES_RUNNER_PROBE=off`). */
export const denyPrivateProbe = (resolve: Resolver = systemResolver): Layer.Layer<RunnerProbe, never, RunnerProbe> =>
  Layer.effect(RunnerProbe, Effect.map(RunnerProbe, (inner) => RunnerProbe.of({
    check: (runner) =>
      check(resolve)(runner).pipe(
        Effect.mapError((message) => new RunnerProbeFailed({ message })),
        Effect.andThen(inner.check(runner))
      )
  })))

/** The gateway, refusing every call to a denied endpoint as unreachable (the dispatcher then moves the workflow on). */
export const denyPrivateGateway = (resolve: Resolver = systemResolver): Layer.Layer<RunnerGateway, never, RunnerGateway> =>
  Layer.effect(RunnerGateway, Effect.map(RunnerGateway, (inner) => {
    const guard = (runner: RunnerTarget) =>
      check(resolve)(runner).pipe(Effect.mapError((message) => new RunnerUnreachable({ runner_id: runner.id, message })))
    return RunnerGateway.of({
      probe: (runner) => Effect.andThen(guard(runner), inner.probe(runner)),
      nodeReplacements: (runner) => Effect.andThen(guard(runner), inner.nodeReplacements(runner)),
      objectInfo: (runner) => Effect.andThen(guard(runner), inner.objectInfo(runner)),
      uploadInput: (runner, file) => Effect.andThen(guard(runner), inner.uploadInput(runner, file)),
      submit: (runner, prompt) => Effect.andThen(guard(runner), inner.submit(runner, prompt)),
      queue: (runner) => Effect.andThen(guard(runner), inner.queue(runner)),
      history: (runner, promptId) => Effect.andThen(guard(runner), inner.history(runner, promptId)),
      status: (runner, promptId) => Effect.andThen(guard(runner), inner.status(runner, promptId)),
      cancel: (runner, promptId) => Effect.andThen(guard(runner), inner.cancel(runner, promptId)),
      download: (runner, file) => Effect.andThen(guard(runner), inner.download(runner, file)),
      events: (runner, clientId) =>
        Effect.flatMap(Effect.result(check(resolve)(runner)), (checked) =>
          Result.isSuccess(checked)
            ? inner.events(runner, clientId)
            // Said once, as a socket that could not open; nothing follows while the address is refused.
            : Effect.tap(
              Effect.acquireRelease(Queue.bounded<RunnerEvent>(1), Queue.shutdown),
              (queue) => Queue.offer(queue, { _tag: "Disconnected", reason: checked.failure })
            ))
    })
  }))
