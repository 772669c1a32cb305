/**
 * Issue 34, items 4 and 5, in a real browser (Debian's Chromium): the Runners view shows an agent
 * runner's health (connected or not, GPU and VRAM, disk, placed models) and, when it takes no
 * work, the server's reason. First end to end: `WES_DEV=1 wes serve` with a free-disk threshold
 * above any disk, and a real `wes-agent` in front of dev mode's simulated ComfyUI. Then, for the
 * states one machine cannot show at once (a healthy runner beside one short of disk), the runner
 * list the server sends is rewritten in flight to carry them, as the contract declares them.
 * Screenshots as dashboard.test.ts takes them.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildDashboard, type DevServer, launchChromium, startDevServer } from "./server.js"

const images = process.env["WES_SCREENSHOTS"] === "docs"
  ? path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../docs/images")
  : fs.mkdtempSync(path.join(os.tmpdir(), "wes-dashboard-agent-shots-"))

const GiB = 1024 ** 3

/** The `agent` of a runner whose agent is connected, on a 24 GB GPU, with plenty of disk. */
const healthy = {
  connected: true,
  reported_at: "2026-11-28T17:00:00.000Z",
  agent_version: "0.1.0",
  gpu: { name: "NVIDIA GeForce RTX 4090", vram_total_bytes: 24 * GiB, vram_free_bytes: 20 * GiB },
  disk: { free_bytes: 200 * GiB, total_bytes: 1000 * GiB },
  models: { count: 2, bytes: 6.5 * GiB },
  model_budget_bytes: 100 * GiB,
  cleanup: true,
  claiming: true,
  reason: null
}
/** One whose disk is nearly full: it takes no work, and says why. */
const lowDisk = {
  ...healthy,
  disk: { free_bytes: Math.round(1.2 * GiB), total_bytes: 500 * GiB },
  claiming: false,
  reason: "Not taking work: 1.2 GB free disk, below 5 GB"
}

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..")
/** ComfyUI's folder as the agent is told it (the disk it reports holds it). */
const comfyuiDir = fs.mkdtempSync(path.join(os.tmpdir(), "wes-dashboard-agent-comfyui-"))
for (const folder of ["models", "output", "temp", "input"]) fs.mkdirSync(path.join(comfyuiDir, folder))

let server: DevServer
let browser: Browser
let page: Page
let agent: ChildProcess | undefined

beforeAll(async () => {
  buildDashboard()
  // Above any disk: the agent runner takes no work, and says why.
  server = await startDevServer({ WES_AGENT_MIN_FREE_DISK: "8000TB" })
  browser = await launchChromium()
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } })
  page.setDefaultTimeout(45_000)
})

afterAll(async () => {
  if (agent !== undefined && agent.exitCode === null && agent.signalCode === null) {
    const exited = new Promise((resolve) => agent!.once("exit", resolve))
    agent.kill("SIGKILL")
    await exited
  }
  fs.rmSync(comfyuiDir, { recursive: true, force: true })
  await browser?.close()
  await server?.stop()
  if (process.env["WES_SCREENSHOTS"] !== "docs") fs.rmSync(images, { recursive: true, force: true })
})

const signIn = async () => {
  await page.goto(server.dashboard)
  await page.getByLabel("API token").fill(server.token)
  await page.getByRole("button", { name: "Sign in" }).click()
  await page.getByRole("heading", { name: "Workflows" }).waitFor()
}

/** The value beside the term `name` in a runner's card. */
const fact = (card: ReturnType<Page["getByRole"]>, name: string) =>
  card.locator("dt", { hasText: new RegExp(`^${name}$`) }).locator("xpath=following-sibling::dd[1]")

describe("agent runners in the dashboard", () => {
  it("shows a real agent connected, its health, and why its runner takes no work", async () => {
    const auth = { authorization: `Bearer ${server.token}`, "content-type": "application/json" }
    const listed = (await (await fetch(`${server.dashboard}v1/runner`, { headers: auth })).json()) as { runners: Array<{ endpoint: string }> }
    const created = await fetch(`${server.dashboard}v1/runner`, { method: "POST", headers: auth, body: JSON.stringify({ name: "behind-nat", connection: "agent" }) })
    expect(created.status).toBe(201)
    const { id } = (await created.json()) as { id: string }
    const issued = await fetch(`${server.dashboard}v1/runner/${id}/agent-token`, { method: "POST", headers: auth, body: "{}" })
    expect(issued.status).toBe(201)
    const { token } = (await issued.json()) as { token: string }
    // The agent in front of dev mode's simulated ComfyUI (the demo runner's endpoint).
    agent = spawn(process.execPath, [
      "--import", "tsx", "--conditions=@wes/source", path.join(root, "packages/runner-agent/src/bin.ts"),
      "--comfyui", listed.runners[0]!.endpoint, "--server", server.dashboard.replace(/\/$/, ""), "--comfyui-dir", comfyuiDir
    ], { cwd: root, env: { ...process.env, WES_RUNNER_TOKEN: token }, stdio: "ignore" })

    await signIn()
    await page.goto(`${server.dashboard}#/runners`)
    const card = page.getByRole("article", { name: "Runner behind-nat" })
    expect(await fact(card, "Endpoint").textContent()).toBe("through its wes-agent")
    // Connected once the agent's first report is in (the view reads once: reload until it is).
    await expect.poll(async () => {
      await page.reload()
      await card.waitFor()
      return card.locator(".badge", { hasText: /^connected$/ }).count()
    }, { timeout: 45_000, interval: 500 }).toBe(1)
    await card.getByRole("note").filter({ hasText: /^Not taking work: [\d.]+ (GB|MB|bytes) free disk, below 8192000 GB$/ }).waitFor()
    expect(await fact(card, "Disk").textContent()).toMatch(/^[\d.]+ (GB|MB) free of [\d.]+ (GB|MB)$/)
    // No GPU here: the simulated ComfyUI's device, as ComfyUI names it.
    expect(await fact(card, "GPU").textContent()).toMatch(/^cpu/)
    expect(await fact(card, "Models").textContent()).toBe("0 placed, 0 bytes (no budget)")
  })

  it("shows a healthy agent runner's facts beside the reason of one with a nearly full disk", async () => {
    const auth = { authorization: `Bearer ${server.token}`, "content-type": "application/json" }
    // A second runner beside the demo one (the same simulated ComfyUI), to read as the low-disk one.
    const listed = (await (await fetch(`${server.dashboard}v1/runner`, { headers: auth })).json()) as { runners: Array<{ endpoint: string; connection: string }> }
    const created = await fetch(`${server.dashboard}v1/runner`, { method: "POST", headers: auth, body: JSON.stringify({ name: "attic-gpu", endpoint: listed.runners.find((r) => r.connection === "direct")!.endpoint }) })
    expect(created.status).toBe(201)
    await page.route(/\/v1\/runner(\?.*)?$/, async (route) => {
      if (route.request().method() !== "GET") return route.continue()
      const response = await route.fetch()
      const body = (await response.json()) as { runners: Array<Record<string, unknown>>; total: number }
      body.runners = body.runners.flatMap((r): Array<Record<string, unknown>> =>
        r["name"] === "attic-gpu"
          ? [{ ...r, endpoint: "http://agent.invalid", connection: "agent", agent: lowDisk }]
          : r["name"] === "behind-nat"
          ? [{ ...r, name: "home-gpu", endpoint: "http://agent.invalid", connection: "agent", agent: healthy }]
          : [])
      body.total = body.runners.length
      return route.fulfill({ response, json: body })
    })
    await page.goto(`${server.dashboard}#/runners`)
    await page.reload()

    const home = page.getByRole("article", { name: "Runner home-gpu" })
    await home.locator(".badge", { hasText: /^connected$/ }).waitFor()
    expect(await fact(home, "Endpoint").textContent()).toBe("through its wes-agent")
    expect(await fact(home, "GPU").textContent()).toBe("NVIDIA GeForce RTX 4090, VRAM 20 GB free of 24 GB")
    expect(await fact(home, "Disk").textContent()).toBe("200 GB free of 1000 GB")
    expect(await fact(home, "Models").textContent()).toBe("2 placed, 6.5 GB of a 100 GB budget")
    // Taking work: no reason shown.
    expect(await home.getByRole("note").count()).toBe(0)

    const attic = page.getByRole("article", { name: "Runner attic-gpu" })
    await attic.getByRole("note").filter({ hasText: "Not taking work: 1.2 GB free disk, below 5 GB" }).waitFor()
    expect(await fact(attic, "Disk").textContent()).toBe("1.2 GB free of 500 GB")

    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: width === 1280 ? 800 : 844 })
      await page.screenshot({ path: path.join(images, `dashboard-runners-agent-${width}.png`), fullPage: true })
      expect(await page.evaluate(() => document.documentElement.scrollWidth), `runners at ${width} px`).toBeLessThanOrEqual(width)
    }
  })
})
