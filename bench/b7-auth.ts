/**
 * B7: the cost of authentication and the rate limit. `GET /v1/user` with a valid token against
 * the same route with authentication bypassed (authentication answers the set-up user without
 * looking at the request); what auth adds is the difference in server CPU time per request, the
 * median of the differences of rounds run side by side (the two servers' costs drift together
 * with the machine's, by more than auth costs; a difference of whole-run means was noise). Then
 * 100,000 malformed tokens (none may reach the store); then many requests per token, twice
 * within a minute (one last_used_at write per token the first time, none the second).
 */
import autocannon from "autocannon"
import { alternate, type Benchmark } from "./lib/bench.js"
import { start } from "./lib/child.js"
import { load, withCpu } from "./lib/load.js"
import { fmt, type Row, verdict } from "./lib/report.js"
import { mean, summarize } from "./lib/stats.js"

interface Counters {
  readonly tokenLookups: number
  readonly tokenUseWrites: number
  readonly tokenUseRows: number
}

/** Tokens that look like WES tokens but fail the checksum (or the prefix, or the length). */
const malformed = (i: number): string => {
  const body = (i.toString(36) + "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH").slice(0, 42)
  return i % 3 === 0 ? `wes_${body}` : i % 3 === 1 ? `wes_${body.slice(0, 30)}` : `xyz_${body}`
}

export const b7: Benchmark = {
  id: "B7",
  title: "auth and rate limit: GET /v1/user, valid token vs auth bypassed",
  run: async (size) => {
    const seconds = size === "full" ? 4 : 1
    const rounds = size === "full" ? 8 : 1
    const malformedCount = size === "full" ? 100_000 : 2_000
    const authed = await start<{ url: string }>("servers/wes.ts", { BENCH_DISPATCH: "off" })
    const bypassed = await start<{ url: string }>("servers/wes.ts", { BENCH_DISPATCH: "off", BENCH_AUTH: "bypass" })
    try {
      const { token } = await authed.call<{ token: string }>("setup")
      await bypassed.call("setup")
      const auth = { authorization: `Bearer ${token}` }
      await load({ url: `${authed.ready.url}/v1/user`, connections: 50, durationSeconds: 1, headers: auth })
      await load({ url: `${bypassed.ready.url}/v1/user`, connections: 50, durationSeconds: 1 })
      const { a, b } = await alternate(
        rounds,
        () => withCpu(authed, () => load({ url: `${authed.ready.url}/v1/user`, connections: 50, durationSeconds: seconds, headers: auth })),
        () => withCpu(bypassed, () => load({ url: `${bypassed.ready.url}/v1/user`, connections: 50, durationSeconds: seconds }))
      )
      const withAuth = mean(a.map((r) => r.rps))
      const without = mean(b.map((r) => r.rps))
      const cpuWith = mean(a.map((r) => r.cpuPerRequest))
      const cpuWithout = mean(b.map((r) => r.cpuPerRequest))
      const addedMicros = summarize(a.map((r, i) => r.cpuPerRequest - b[i]!.cpuPerRequest)).p50

      const before = await authed.call<Counters>("counters")
      let i = 0
      let unauthorized = 0
      await new Promise<void>((resolve, reject) => {
        const instance = autocannon({
          url: `${authed.ready.url}/v1/user`,
          connections: 50,
          amount: malformedCount,
          requests: [{ setupRequest: (req) => ({ ...req, headers: { authorization: `Bearer ${malformed(i++)}` } }) }]
        }, (err) => (err ? reject(err) : resolve()))
        instance.on("response", (_client, status) => {
          if (status === 401) unauthorized++
        })
      })
      const afterMalformed = await authed.call<Counters>("counters")

      // Many requests with several tokens inside one minute: one write per token, then none.
      const tokens = await authed.call<ReadonlyArray<string>>("createUsers", { n: 20 })
      await authed.call("flushTokenUse")
      const rows = async () => {
        const start = (await authed.call<Counters>("counters")).tokenUseRows
        for (const t of tokens) await load({ url: `${authed.ready.url}/v1/user`, connections: 5, durationSeconds: 0.2, headers: { authorization: `Bearer ${t}` } })
        await authed.call("flushTokenUse")
        return (await authed.call<Counters>("counters")).tokenUseRows - start
      }
      const firstUse = await rows()
      const secondUse = await rows()

      return [
        { bench: "B7", metric: "requests/s, GET /v1/user (with auth / bypassed)", wes: fmt(withAuth), peer: fmt(without), ratio: `${fmt(withAuth / without, 2)}x`, target: "", met: "n/a" },
        { bench: "B7", metric: "server CPU per request (µs, with auth / bypassed)", wes: fmt(cpuWith, 1), peer: fmt(cpuWithout, 1), ratio: `${fmt(cpuWith / cpuWithout, 2)}x`, target: "", met: "n/a" },
        { bench: "B7", metric: "time auth adds per request (µs of CPU, median of paired rounds)", wes: fmt(addedMicros, 1), peer: "0", ratio: "", target: "<= 30 µs", met: verdict(addedMicros <= 30) },
        { bench: "B7", metric: `store lookups for ${fmt(malformedCount)} malformed tokens`, wes: fmt(afterMalformed.tokenLookups - before.tokenLookups), peer: "", ratio: "", target: "0", met: verdict(afterMalformed.tokenLookups === before.tokenLookups) },
        { bench: "B7", metric: "malformed tokens answered 401", wes: fmt(unauthorized), peer: "", ratio: "", target: fmt(malformedCount), met: verdict(unauthorized === malformedCount) },
        { bench: "B7", metric: "last_used_at rows written: 20 tokens used ~0.2 s each, then again (< 1 min)", wes: `${fmt(firstUse)}, then ${fmt(secondUse)}`, peer: "", ratio: "", target: "20, then 0 (1 per token per minute)", met: verdict(firstUse <= 20 && secondUse === 0) }
      ] satisfies ReadonlyArray<Row>
    } finally {
      await Promise.all([authed.stop(), bypassed.stop()])
    }
  }
}
