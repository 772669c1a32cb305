/**
 * B12: what reaching runners through `wes-agent` costs (issue 34), against reaching the same fake
 * runners directly; memory store (the tunnel's cost does not depend on the store).
 * (a) B1 through an agent: serial `POST /v1/workflow` until the fake receives `/prompt`, one WES
 *     process with two users on one fake runner, one registered directly and one behind an agent,
 *     in alternating blocks (so machine drift and the process's warmth hit both); also WES's CPU
 *     per submission over each side's blocks.
 * (b) B2 through agents: n workflows stored, then the dispatcher started and the burn-down timed
 *     over 8 fake runners, once registered directly and once each behind its own agent (a fresh
 *     WES and fakes per side); WES's CPU per workflow, and the agents' own (one process for the 8).
 * The ratios are agent / direct: the `peer` column holds the direct figure. The agents run
 * in-process in one child (`servers/agents.ts`), with cleanup off: what is measured is the tunnel
 * carrying the work a direct runner does, not the file deletion only an agent can do.
 */
import * as http from "node:http"
import { burnDown } from "./b2-throughput.js"
import { listen, post, submitBody } from "./b1-latency.js"
import { type Benchmark, sleep } from "./lib/bench.js"
import { type Child, start } from "./lib/child.js"
import { fmt, ratio, type Row, verdict } from "./lib/report.js"
import { summarize } from "./lib/stats.js"

interface SetupResult {
  readonly token: string
  readonly runnerIds: ReadonlyArray<string>
  /** Agent runners (`agents: n` in setup) and a runner token for each. */
  readonly agentRunners: ReadonlyArray<{ readonly id: string; readonly token: string }>
}

/** The target of every ratio (issue 34): agent <= 1.3 x direct. */
const TARGET = 1.3

/** Starts one agent per (fake, runner token) in a child, and waits until WES says each is connected. */
const startAgents = async (wes: Child<{ url: string }>, fakeUrls: ReadonlyArray<string>, setup: SetupResult) => {
  const agents = await start<Record<string, never>>("servers/agents.ts", {
    AGENTS_SERVER: wes.ready.url,
    AGENTS: JSON.stringify(setup.agentRunners.map((r, i) => ({ comfyui: fakeUrls[i % fakeUrls.length]!, token: r.token })))
  })
  const deadline = Date.now() + 60_000
  for (;;) {
    const views = await Promise.all(setup.agentRunners.map(async (r) => {
      const res = await fetch(`${wes.ready.url}/v1/runner/${r.id}`, { headers: { authorization: `Bearer ${setup.token}` } })
      return (await res.json()) as { agent?: { connected?: boolean } | null }
    }))
    if (views.every((v) => v.agent?.connected === true)) return agents
    if (Date.now() > deadline) {
      const log = await agents.call<ReadonlyArray<string>>("log")
      await agents.stop()
      throw new Error(`B12: agents not connected after 60 s; their log:\n${log.slice(-20).join("\n")}`)
    }
    await sleep(50)
  }
}

/** (a) B1 direct vs through an agent, alternating blocks in one WES process. */
const latency = async (n: number, block: number, warmUp: number) => {
  const fakes = await start<{ urls: ReadonlyArray<string> }>("servers/fakes.ts", { FAKES: "1", FAKES_PUSH: "on" })
  const arrivals = listen(fakes, "arrival")
  const wes = await start<{ url: string }>("servers/wes.ts", { BENCH_AGENT: "on" })
  const connection = new http.Agent({ keepAlive: true, maxSockets: 1 })
  let agents: Child<Record<string, never>> | undefined
  try {
    const direct = await wes.call<SetupResult>("setup", { runners: fakes.ready.urls })
    const behind = await wes.call<SetupResult>("setup", { agents: 1 })
    agents = await startAgents(wes, fakes.ready.urls, behind)
    const body = submitBody()
    const submitter = (token: string) => {
      const auth = { authorization: `Bearer ${token}` }
      return async () => {
        const { sent, id } = await post(connection, wes.ready.url, auth, body)
        return (await arrivals.wait(id)) - sent
      }
    }
    const sides = { direct: submitter(direct.token), agent: submitter(behind.token) }
    const results: Record<keyof typeof sides, Array<number>> = { direct: [], agent: [] }
    const cpu: Record<keyof typeof sides, number> = { direct: 0, agent: 0 }
    for (const side of Object.keys(sides) as Array<keyof typeof sides>) for (let i = 0; i < warmUp; i++) await sides[side]()
    for (let done = 0; done < n; done += block) {
      for (const side of Object.keys(sides) as Array<keyof typeof sides>) {
        const cpu0 = await wes.call<number>("cpu")
        for (let i = 0; i < block; i++) results[side].push(await sides[side]())
        cpu[side] += (await wes.call<number>("cpu")) - cpu0
      }
    }
    return {
      direct: summarize(results.direct),
      agent: summarize(results.agent),
      cpuMs: { direct: cpu.direct / results.direct.length / 1000, agent: cpu.agent / results.agent.length / 1000 }
    }
  } finally {
    connection.destroy()
    await Promise.all([agents?.stop(), wes.stop(), fakes.stop()])
  }
}

/** (b) B2's burn-down over 8 fakes, registered directly or each behind an agent. */
const throughput = async (side: "direct" | "agent", n: number) => {
  const fakes = await start<{ urls: ReadonlyArray<string> }>("servers/fakes.ts", { FAKES: "8" })
  const wes = await start<{ url: string }>("servers/wes.ts", { BENCH_DISPATCH: "off", BENCH_AGENT: "on" })
  let agents: Child<Record<string, never>> | undefined
  try {
    const setup = await wes.call<SetupResult>("setup", side === "direct" ? { runners: fakes.ready.urls } : { agents: fakes.ready.urls.length })
    if (side === "agent") agents = await startAgents(wes, fakes.ready.urls, setup)
    const agentCpu0 = agents === undefined ? 0 : await agents.call<number>("cpu")
    const run = await burnDown(wes, n)
    const agentCpuMs = agents === undefined ? 0 : ((await agents.call<number>("cpu")) - agentCpu0) / n / 1000
    const submissions = await fakes.call<{ total: number; unique: number }>("submissions")
    return { ...run, agentCpuMs, submissions }
  } finally {
    await Promise.all([agents?.stop(), wes.stop(), fakes.stop()])
  }
}

export const b12: Benchmark = {
  id: "B12",
  title: "runner agent: B1 latency and B2 CPU per workflow through wes-agent, against direct",
  run: async (size) => {
    // BENCH_B12_SCALE (0-1, full size only): a fraction of the full counts, for a quick look on a busy machine.
    const scale = size === "full" ? Math.min(1, Math.max(0.01, Number(process.env["BENCH_B12_SCALE"] ?? "1") || 1)) : 1
    const block = size === "full" ? Math.max(10, Math.round(100 * scale)) : 10
    const n = size === "full" ? Math.max(block, Math.round(1000 * scale / block) * block) : 20
    const warmUp = size === "full" ? Math.round(2000 * scale) : 10
    const burn = size === "full" ? Math.round(20_000 * scale) : 200
    const a = await latency(n, block, warmUp)
    const direct = await throughput("direct", burn)
    const agent = await throughput("agent", burn)
    const within = (x: number, y: number) => verdict(Number.isFinite(x / y) ? x / y <= TARGET : undefined)
    const rows: Array<Row> = [
      { bench: "B12", metric: "B1 via agent: p50 submit -> /prompt (ms); peer: direct", wes: fmt(a.agent.p50, 2), peer: fmt(a.direct.p50, 2), ratio: ratio(a.agent.p50, a.direct.p50), target: `<= ${TARGET}x direct`, met: within(a.agent.p50, a.direct.p50) },
      { bench: "B12", metric: "B1 via agent: p99 (ms); peer: direct", wes: fmt(a.agent.p99, 2), peer: fmt(a.direct.p99, 2), ratio: ratio(a.agent.p99, a.direct.p99), target: "", met: "n/a" },
      { bench: "B12", metric: "B1 via agent: WES CPU per submission (ms); peer: direct", wes: fmt(a.cpuMs.agent, 2), peer: fmt(a.cpuMs.direct, 2), ratio: ratio(a.cpuMs.agent, a.cpuMs.direct), target: `<= ${TARGET}x direct`, met: within(a.cpuMs.agent, a.cpuMs.direct) },
      { bench: "B12", metric: `B2 via 8 agents: WES CPU per workflow, create -> completed (ms, ${fmt(burn)}); peer: direct`, wes: fmt(agent.cpuMs, 2), peer: fmt(direct.cpuMs, 2), ratio: ratio(agent.cpuMs, direct.cpuMs), target: `<= ${TARGET}x direct`, met: within(agent.cpuMs, direct.cpuMs) },
      { bench: "B12", metric: "B2 via 8 agents: the agents' CPU per workflow (ms, one process)", wes: fmt(agent.agentCpuMs, 2), peer: "", ratio: "", target: "", met: "n/a" },
      { bench: "B12", metric: "B2 via 8 agents: WES + agents CPU per workflow (ms); peer: direct", wes: fmt(agent.cpuMs + agent.agentCpuMs, 2), peer: fmt(direct.cpuMs, 2), ratio: ratio(agent.cpuMs + agent.agentCpuMs, direct.cpuMs), target: "", met: "n/a" },
      { bench: "B12", metric: "B2 via 8 agents: workflows/s; peer: direct", wes: fmt(agent.perSecond), peer: fmt(direct.perSecond), ratio: ratio(agent.perSecond, direct.perSecond), target: "", met: "n/a" },
      { bench: "B12", metric: "B2 via 8 agents: prompts received (total / unique); peer: direct", wes: `${fmt(agent.submissions.total)} / ${fmt(agent.submissions.unique)}`, peer: `${fmt(direct.submissions.total)} / ${fmt(direct.submissions.unique)}`, ratio: "", target: `${fmt(burn)} / ${fmt(burn)}`, met: verdict(agent.submissions.total === burn && agent.submissions.unique === burn) },
      { bench: "B12", metric: "B1 submissions measured per side", wes: fmt(a.agent.n), peer: fmt(a.direct.n), ratio: "", target: "1,000", met: verdict(a.agent.n >= 1000) }
    ]
    return rows
  }
}
