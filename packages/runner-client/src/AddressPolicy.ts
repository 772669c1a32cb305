/**
 * Which addresses a multi-tenant server may connect to for a user (SSRF): the classification of
 * IP addresses as private, loopback, link-local, unspecified, multicast or reserved, the resolver
 * that turns a host name into addresses, and the words a refusal is said in. Shared by the runner
 * gateway, webhook deliveries and URL inputs (`GuardedConnect.ts` connects only to what it checked).
 */
import * as dns from "node:dns/promises"
import * as net from "node:net"

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

/** An IP literal without its URL brackets (`[::1]` -> `::1`). */
export const unbracket = (host: string): string => host.replace(/^\[|\]$/g, "")

/**
 * True for an address a multi-tenant server must not connect to for a user: private, loopback,
 * link-local, unspecified, multicast or reserved, IPv4 or IPv6 (IPv4-mapped, -compatible, NAT64
 * and 6to4 addresses are judged by the IPv4 address they carry). Not an IP address: true.
 */
export const isPrivateAddress = (address: string): boolean => {
  const ip = unbracket(address)
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

/** The refusals, in `words` (the address itself is never named: the answer must not tell a user what the server's DNS knows). */
export const refusalMessages = (words: RefusalWords) => ({
  invalid: `${words.url} is not a valid URL`,
  unresolved: (host: string) => `${words.host} ${host} could not be resolved, so it cannot be checked for private addresses (${words.fix})`,
  empty: (host: string) => `${words.host} ${host} resolves to no address (${words.fix})`,
  denied: (host: string) => `${words.refused} ${host} is on a private, loopback, link-local or unspecified address, which is refused (${words.fix})`
})
