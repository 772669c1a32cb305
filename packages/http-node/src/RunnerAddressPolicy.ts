/**
 * The default (unless `WES_DEV` or `WES_RUNNER_ALLOW_PRIVATE=true`): user-owned runner endpoints
 * may not point into the server's own network (SSRF). An endpoint whose host is, or resolves to, a private,
 * loopback, link-local, unspecified (or multicast / reserved) address is refused: with a 400 when
 * a runner is created or its endpoint changes, and again before every call to the runner while
 * dispatching, since DNS answers can change after the check. Managed runners (the operator's own)
 * are not restricted.
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
import * as dns from "node:dns/promises"
import * as net from "node:net"

export const ALLOW_PRIVATE_SETTING = "WES_RUNNER_ALLOW_PRIVATE"
const FIX = `the server's operator can allow such endpoints with ${ALLOW_PRIVATE_SETTING}=true`

/** The addresses a host name stands for (IP literals stand for themselves). */
export type Resolver = (host: string) => Promise<ReadonlyArray<string>>

export const systemResolver: Resolver = async (host) =>
  (await dns.lookup(host, { all: true, verbatim: true })).map((a) => a.address)

const v4Bytes = (ip: string): ReadonlyArray<number> => ip.split(".").map(Number)

/** The 16 bytes of an IPv6 address (with or without an embedded dotted IPv4 tail). */
const v6Bytes = (ip: string): ReadonlyArray<number> => {
  let text = ip.replace(/%.*$/, "")
  const tail: Array<number> = []
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  if (dotted !== null) {
    const [a, b, c, d] = v4Bytes(dotted[1]!)
    text = text.slice(0, dotted.index) + `${((a! << 8) | b!).toString(16)}:${((c! << 8) | d!).toString(16)}`
  }
  const [head, rest] = text.split("::") as [string, string | undefined]
  const groups = (s: string) => (s === "" ? [] : s.split(":").map((g) => parseInt(g, 16)))
  const left = groups(head)
  const right = rest === undefined ? [] : groups(rest)
  const all = [...left, ...Array.from({ length: 8 - left.length - right.length }, () => 0), ...right]
  for (const g of all) tail.push(g >> 8, g & 255)
  return tail
}

const privateV4 = ([a, b, c]: ReadonlyArray<number>): boolean =>
  a === 0 || // "this network", including the unspecified 0.0.0.0
  a === 10 ||
  a === 127 || // loopback
  (a === 100 && b! >= 64 && b! <= 127) || // carrier-grade NAT
  (a === 169 && b === 254) || // link-local (and cloud metadata services)
  (a === 172 && b! >= 16 && b! <= 31) ||
  (a === 192 && b === 168) ||
  (a === 192 && b === 0 && c === 0) || // IETF protocol assignments
  (a === 198 && (b === 18 || b === 19)) || // benchmarking
  a! >= 224 // multicast, reserved, broadcast

/**
 * True for an address a multi-tenant server must not connect to for a user: private, loopback,
 * link-local, unspecified, multicast or reserved, IPv4 or IPv6 (IPv4-mapped, -compatible, NAT64
 * and 6to4 addresses are judged by the IPv4 address they carry). Not an IP address: true.
 */
export const isPrivateAddress = (address: string): boolean => {
  const ip = address.replace(/^\[|\]$/g, "")
  const kind = net.isIP(ip.replace(/%.*$/, ""))
  if (kind === 4) return privateV4(v4Bytes(ip))
  if (kind !== 6) return true
  const b = v6Bytes(ip)
  const zeros = (from: number, to: number) => b.slice(from, to).every((x) => x === 0)
  const embedded = (at: number) => privateV4(b.slice(at, at + 4))
  if (zeros(0, 10) && b[10] === 0xff && b[11] === 0xff) return embedded(12) // ::ffff:a.b.c.d
  if (zeros(0, 12)) return zeros(12, 15) ? true : embedded(12) // ::, ::1, ::a.b.c.d
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zeros(4, 12)) return embedded(12) // 64:ff9b::/96
  if (b[0] === 0x20 && b[1] === 0x02) return embedded(2) // 6to4
  if ((b[0]! & 0xfe) === 0xfc) return true // unique local fc00::/7
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0x80) return true // link-local fe80::/10
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0xc0) return true // site-local fec0::/10 (deprecated)
  if (b[0] === 0xff) return true // multicast
  return false
}

/** How a refusal names what it refuses: the URL, its host, and the host when refused, and the fix. */
export interface RefusalWords {
  readonly url: string
  readonly host: string
  readonly refused: string
  readonly fix: string
}

const RUNNER_WORDS: RefusalWords = { url: "runner endpoint", host: "runner endpoint host", refused: "runner endpoint", fix: FIX }

/**
 * Why `url` is refused, or undefined when every address its host resolves to is public (runner
 * endpoints here; webhook URLs in WebhookSenderNode.ts, with their own words).
 */
export const refusal = async (url: string, resolve: Resolver, words: RefusalWords = RUNNER_WORDS): Promise<string | undefined> => {
  let host: string
  try {
    host = new URL(url).hostname.replace(/^\[|\]$/g, "")
  } catch {
    return `${words.url} is not a valid URL`
  }
  let addresses: ReadonlyArray<string>
  try {
    addresses = net.isIP(host) !== 0 ? [host] : await resolve(host)
  } catch {
    return `${words.host} ${host} could not be resolved, so it cannot be checked for private addresses (${words.fix})`
  }
  if (addresses.length === 0) return `${words.host} ${host} resolves to no address (${words.fix})`
  // The address itself is not named: the answer must not tell a user what the server's DNS knows.
  return addresses.some(isPrivateAddress)
    ? `${words.refused} ${host} is on a private, loopback, link-local or unspecified address, which is refused (${words.fix})`
    : undefined
}

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
