/**
 * Connections that go only where the address policy allows, to exactly the address it checked:
 * a host name is resolved ONCE per connection (by the guard's resolver), refused when any of its
 * addresses is denied, and the socket then connects to those addresses (node's `lookup` hook), so
 * a name that answers differently the second time (DNS rebinding) never reaches a private address.
 * IP literals are judged as they are. TLS still verifies the certificate against the host name.
 * Used through undici (`guardedAgent`: runner calls, webhooks, URL inputs) and `ws` (`guardedSocket`).
 */
import * as net from "node:net"
import * as tls from "node:tls"
import { Agent, buildConnector } from "undici"
import { isPrivateAddress, type RefusalWords, refusalMessages, type Resolver, systemResolver, unbracket } from "./AddressPolicy.js"

/** What a guarded connection may reach. */
export interface AddressGuard {
  /** How a refusal is worded (what is refused, and the setting that allows it). */
  readonly words: RefusalWords
  /** Default: the system's (`dns.lookup`, every address). */
  readonly resolve?: Resolver | undefined
  /** Default: `isPrivateAddress`. */
  readonly denied?: ((address: string) => boolean) | undefined
}

/** A connection the guard refused; its message says why, in the guard's words. */
export class AddressRefused extends Error {
  readonly code = "WES_ADDRESS_REFUSED"
  override readonly name = "AddressRefused"
}

/** True when `e`, or an error in its `cause` chain, is the guard's refusal. */
export const refusedBy = (e: unknown): AddressRefused | undefined => {
  let current: unknown = e
  for (let depth = 0; depth < 8 && typeof current === "object" && current !== null; depth++) {
    if (current instanceof AddressRefused) return current
    current = (current as { cause?: unknown }).cause
  }
  return undefined
}

/** The refusal of an IP literal `host`, or undefined when it is allowed (or not a literal). */
export const literalRefusal = (guard: AddressGuard, host: string): AddressRefused | undefined => {
  const ip = unbracket(host)
  return net.isIP(ip.replace(/%.*$/, "")) !== 0 && (guard.denied ?? isPrivateAddress)(ip)
    ? new AddressRefused(refusalMessages(guard.words).denied(ip))
    : undefined
}

/** node's `lookup` hook: resolves once, refuses a denied answer, hands over the checked addresses. */
export const guardedLookup = (guard: AddressGuard): net.LookupFunction => (hostname, options, callback) => {
  const words = refusalMessages(guard.words)
  const denied = guard.denied ?? isPrivateAddress
  const fail = (e: AddressRefused) => callback(e, "", 0)
  ;(guard.resolve ?? systemResolver)(hostname).then((addresses) => {
    if (addresses.length === 0) return fail(new AddressRefused(words.empty(hostname)))
    if (addresses.some(denied)) return fail(new AddressRefused(words.denied(hostname)))
    const all = addresses.map((address) => ({ address, family: net.isIP(address) === 6 ? 6 : 4 }))
    const wanted = options.family === 4 || options.family === 6 ? all.filter((a) => a.family === options.family) : all
    if (wanted.length === 0) return fail(new AddressRefused(words.empty(hostname)))
    return options.all === true ? callback(null, wanted) : callback(null, wanted[0]!.address, wanted[0]!.family)
  }, () => fail(new AddressRefused(words.unresolved(hostname))))
}

/** undici's connector under `guard`; `options` are its usual ones (timeout, TLS...). */
export const guardedConnector = (guard: AddressGuard, options: buildConnector.BuildOptions = {}): buildConnector.connector => {
  const base = buildConnector({ ...options, lookup: guardedLookup(guard) } as buildConnector.BuildOptions)
  return (opts, callback) => {
    const refused = literalRefusal(guard, opts.hostname)
    if (refused !== undefined) return callback(refused, null)
    return base(opts, callback)
  }
}

/** An undici `Agent` whose every connection is guarded (none: an ordinary one). */
export const guardedAgent = (guard: AddressGuard | undefined, options: Agent.Options = {}): Agent => {
  if (guard === undefined) return new Agent(options)
  const connect = typeof options.connect === "function" ? undefined : options.connect
  return new Agent({ ...options, connect: guardedConnector(guard, connect) })
}

/**
 * `ws`'s (and node http's) `createConnection` under `guard`, for `secure` (TLS, SNI = the host
 * name) or plain sockets: a refused literal ends the socket with the refusal; a name is resolved
 * by the guard.
 */
export const guardedSocket = (guard: AddressGuard, secure: boolean) => (options: tls.ConnectionOptions & net.TcpNetConnectOpts): net.Socket => {
  const host = options.host ?? ""
  const refused = literalRefusal(guard, host)
  if (refused !== undefined) {
    const socket = new net.Socket()
    process.nextTick(() => socket.destroy(refused))
    return socket
  }
  const lookup = guardedLookup(guard)
  if (!secure) return net.connect({ ...options, lookup })
  const servername = options.servername ?? (net.isIP(host) === 0 ? host : undefined)
  return tls.connect({ ...options, lookup, ...(servername === undefined ? {} : { servername }) })
}
