/**
 * The dashboard in a real browser (Debian's Chromium) against `wes serve` in dev mode with the
 * simulated ComfyUI. The steps share one signed-in page, in order, as a person would use it.
 * Every wait is for a condition on the page; screenshots of each view at 1280 and 390 px are
 * taken on every run (each view must fit its width) and kept in a temporary directory, or written
 * to docs/images/ (docs/dashboard.md shows them) with WES_SCREENSHOTS=docs.
 */
import { solidPng } from "@wes/runner-client/testing"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ADMIN_TOKEN, buildDashboard, type DevServer, launchChromium, startDevServer } from "./server.js"

const images = process.env["WES_SCREENSHOTS"] === "docs"
  ? path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../docs/images")
  : fs.mkdtempSync(path.join(os.tmpdir(), "wes-dashboard-shots-"))

/** A workflow with a file, a text and a choice parameter, and a step that reports progress. */
const invertWorkflow = {
  "1": { class_type: "LoadImage", inputs: { image: "$file(photo)" } },
  "2": { class_type: "FakeSleep", inputs: { seconds: 1.5, steps: 6, value: ["1", 0] } },
  "3": { class_type: "ImageInvert", inputs: { image: ["2", 0] } },
  "4": { class_type: "SaveImage", inputs: { images: ["3", 0], filename_prefix: "$text(prefix, dash/inverted)" } },
  "5": { class_type: "PrimitiveString", inputs: { value: "#choice(style, photo, sketch)" } },
  "6": { class_type: "PreviewAny", inputs: { source: ["5", 0] } }
}
const sleepWorkflow = (seconds: number) => ({
  "1": { class_type: "EmptyImage", inputs: { width: 16, height: 16, batch_size: 1, color: 0 } },
  "2": { class_type: "FakeSleep", inputs: { seconds, steps: 100, value: ["1", 0] } },
  "3": { class_type: "SaveImage", inputs: { images: ["2", 0], filename_prefix: "dash/sleep" } }
})
const jsonFile = (name: string, body: unknown) => ({ name, mimeType: "application/json", buffer: Buffer.from(JSON.stringify(body)) })
const photo = { name: "photo.png", mimeType: "image/png", buffer: solidPng(24, 24, 0x3366cc) }

let server: DevServer
let browser: Browser
let page: Page
/** Requests the page sent to the server, in order. */
const requests: Array<string> = []

const shoot = async (name: string) => {
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: width === 1280 ? 800 : 844 })
    await page.screenshot({ path: path.join(images, `dashboard-${name}-${width}.png`), fullPage: true })
    // Usable at this width: nothing reaches past the right edge.
    expect(await page.evaluate(() => document.documentElement.scrollWidth), `${name} at ${width} px`).toBeLessThanOrEqual(width)
  }
  await page.setViewportSize({ width: 1280, height: 800 })
}

const go = async (hash: string, heading: string) => {
  await page.goto(`${server.dashboard}#${hash}`)
  await page.getByRole("heading", { name: heading }).first().waitFor()
}

/** Submits `workflow` from the Submit view with `fill` filling its form; the new workflow's id. */
const submit = async (name: string, workflow: unknown, fill: () => Promise<void> = async () => {}) => {
  await go("/submit", "Submit a workflow")
  await page.getByLabel(/Workflow file/).setInputFiles(jsonFile(`${name}.json`, workflow))
  await page.getByLabel("Name", { exact: true }).fill(name)
  await fill()
  await page.getByRole("button", { name: "Submit workflow" }).click()
  await page.waitForURL(/#\/workflows\/[0-9a-f-]{36}$/)
  return page.url().split("/").pop()!
}

const badge = (status: string) => page.locator("h2 .badge", { hasText: new RegExp(`^${status}$`) })

beforeAll(async () => {
  buildDashboard()
  server = await startDevServer()
  browser = await launchChromium()
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } })
  // Conditions, not durations: generous, for a machine shared with other suites.
  page.setDefaultTimeout(45_000)
  page.on("request", (r) => requests.push(`${r.method()} ${new URL(r.url()).pathname}`))
})

afterAll(async () => {
  await browser?.close()
  await server?.stop()
  if (process.env["WES_SCREENSHOTS"] !== "docs") fs.rmSync(images, { recursive: true, force: true })
})

describe("dashboard", () => {
  it("is announced by `WES_DEV=1 wes serve` with the demo token", () => {
    expect(server.dashboard).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/)
    expect(server.token).toMatch(/^wes_[A-Za-z0-9]{42}$/)
  })

  it("shows the server's 401 message for a wrong token, and signs in with the demo token", async () => {
    await page.goto(server.dashboard)
    await page.getByLabel("API token").fill("wes_not_a_real_token")
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.getByRole("alert").filter({ hasText: "401: Invalid token" }).waitFor()
    await shoot("signin")
    // By keyboard alone: type the token and press Enter.
    await page.getByLabel("API token").focus()
    await page.keyboard.press("Control+A")
    await page.keyboard.type(server.token)
    await page.keyboard.press("Enter")
    await page.getByRole("heading", { name: "Workflows" }).waitFor()
    // The first Tab reaches the skip link, which moves focus past the navigation.
    await page.keyboard.press("Tab")
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Skip to content")
    expect(await page.evaluate(() => sessionStorage.getItem("wes.token"))).toBe(server.token)
  })

  let firstId = ""
  it("submits a workflow with a text, a choice and a file parameter and follows it to its output image", async () => {
    firstId = await submit("invert", invertWorkflow, async () => {
      await page.getByLabel(/^prefix/).fill("dash/first")
      await page.getByLabel(/^style/).selectOption("sketch")
      await page.getByLabel(/^photo/).setInputFiles(photo)
      await shoot("submit")
    })
    const watchFrom = requests.length
    // The bar moves: a value strictly between empty and full, then completion.
    await page.waitForFunction(() => {
      const bar = document.querySelector<HTMLProgressElement>("#wf-progress")
      return bar !== null && bar.value > 0 && bar.value < 100
    })
    await page.getByTestId("progress-label").filter({ hasText: /step \d+ of 6/ }).waitFor()
    await badge("completed").waitFor()
    const image = page.getByRole("img", { name: /^Output dash\/first|^Output first/ })
    await image.or(page.getByRole("img", { name: /^Output .*\.png/ })).first().waitFor()
    expect(await page.locator(".output img").first().evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth)).toBe(24)
    expect(await page.locator("#wf-progress").evaluate((bar: HTMLProgressElement) => bar.value)).toBe(100)
    await page.getByRole("row", { name: /#choice\(style\)\s+sketch/ }).waitFor()
    await page.getByRole("row", { name: /\$text\(prefix\)\s+dash\/first/ }).waitFor()
    // Watching it took a handful of requests (detail, outputs, one stream, the image), no polling.
    const watching = requests.slice(watchFrom).filter((r) => r.includes("/v1/"))
    expect(watching.filter((r) => r.endsWith("/subscribe"))).toHaveLength(1)
    expect(watching.length).toBeLessThanOrEqual(8)
    await shoot("workflow")
  })

  it("downloads every output at once as a ZIP archive named after the workflow", async () => {
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download all (ZIP)" }).click()])
    expect(download.suggestedFilename()).toBe("invert-outputs.zip")
    const archive = fs.readFileSync(await download.path())
    // A ZIP archive (local file header), holding the output under its subfolder.
    expect(archive.subarray(0, 4).toString("latin1")).toBe("PK\x03\x04")
    expect(archive.toString("latin1")).toMatch(/dash\/first_00001_\.png/)
  })

  it("reruns with a changed parameter", async () => {
    await page.getByText("Rerun with other parameters").click()
    await page.locator(".rerun").getByLabel(/^style/).selectOption("photo")
    await page.locator(".rerun").getByLabel(/^photo/).setInputFiles(photo)
    await page.getByRole("button", { name: "Rerun" }).click()
    await page.waitForURL((url) => /#\/workflows\/[0-9a-f-]{36}$/.test(url.hash) && !url.hash.endsWith(firstId))
    await badge("completed").waitFor()
    await page.getByRole("row", { name: /#choice\(style\)\s+photo/ }).waitFor()
    await page.getByRole("row", { name: /\$text\(prefix\)\s+dash\/first/ }).waitFor()
  })

  it("shows the server's 400 for a bad file and the runner's reason for an invalid workflow", async () => {
    await go("/submit", "Submit a workflow")
    await page.getByLabel(/Workflow file/).setInputFiles(jsonFile("editor.json", { nodes: [], links: [] }))
    await page.getByRole("button", { name: "Submit workflow" }).click()
    await page.getByRole("alert").filter({ hasText: /^400: .*UI \(editor\) format; export it in API format/ }).waitFor()
    await submit("too-small", {
      "1": { class_type: "EmptyImage", inputs: { width: 0, height: 16, batch_size: 1, color: 0 } },
      "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "dash/small" } }
    })
    await badge("invalid").waitFor()
    await page.getByRole("alert").filter({ hasText: "prompt_outputs_failed_validation" }).filter({ hasText: "smaller than min of 1: width" }).waitFor()
    expect(await page.getByRole("button", { name: "Cancel workflow" }).count()).toBe(0)
  })

  it("cancels a queued workflow", async () => {
    const busy = await submit("busy", sleepWorkflow(60))
    await badge("running").waitFor()
    const waiting = await submit("waiting", sleepWorkflow(60))
    await badge("queued").waitFor()
    await page.getByTestId("queue-position").filter({ hasText: /^[1-9]\d*$/ }).waitFor()
    await page.getByRole("button", { name: "Cancel workflow" }).click()
    await badge("cancelled").waitFor()
    expect(waiting).not.toBe(busy)
    await go(`/workflows/${busy}`, "busy")
    await page.getByRole("button", { name: "Cancel workflow" }).click()
    await badge("cancelled").waitFor()
  })

  it("updates the list live from one event stream, without polling", async () => {
    const form = new FormData()
    form.append("name", "live")
    form.append("workflow_json", new Blob([JSON.stringify(sleepWorkflow(2))]), "live.json")
    const res = await fetch(`${server.dashboard}v1/workflow`, { method: "POST", headers: { authorization: `Bearer ${server.token}` }, body: form })
    expect(res.status).toBe(201)
    const from = requests.length
    await go("/workflows", "Workflows")
    const row = page.locator("table.list tbody tr").first()
    await row.getByText("live").waitFor()
    await row.locator(".badge", { hasText: "completed" }).waitFor()
    const sent = requests.slice(from).filter((r) => r.includes("/v1/"))
    expect(sent.filter((r) => r.endsWith("/subscribe"))).toHaveLength(1)
    // One list fetch per status change at most (accepted, uploaded, queued, running, completed).
    expect(sent.filter((r) => r === "GET /v1/workflow").length).toBeLessThanOrEqual(6)
  })

  it("lists workflows newest first, filters them by status and tag, and pages", async () => {
    await go("/workflows", "Workflows")
    const names = () => page.locator("table.list tbody td[data-label=Name]").allTextContents()
    await page.locator("table.list tbody tr").nth(5).waitFor()
    expect(await names()).toEqual(["live", "waiting", "busy", "too-small", "invert", "invert"])
    await shoot("workflows")
    await page.getByLabel("Status").selectOption("cancelled")
    await page.locator("table.list tbody tr").nth(1).waitFor()
    await page.getByText("Page 1 of 1 (2 in all)").waitFor()
    expect(await names()).toEqual(["waiting", "busy"])
    await page.getByLabel("Status").selectOption("")
    // Five more (rejected at once by the runner) make 11: two pages of 10.
    for (const n of [1, 2, 3, 4, 5]) {
      const form = new FormData()
      form.append("name", `extra-${n}`)
      // Known nodes (an unknown one is refused at create), a value the runner rejects.
      const rejected = {
        "1": { class_type: "EmptyImage", inputs: { width: 0, height: 8, batch_size: 1, color: 0 } },
        "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "extra" } }
      }
      form.append("workflow_json", new Blob([JSON.stringify(rejected)]), "extra.json")
      expect((await fetch(`${server.dashboard}v1/workflow`, { method: "POST", headers: { authorization: `Bearer ${server.token}` }, body: form })).status).toBe(201)
    }
    await page.getByLabel("Per page").selectOption("10")
    await page.getByText("Page 1 of 2 (11 in all)").waitFor()
    expect(await names()).toHaveLength(10)
    expect((await names())[0]).toBe("extra-5")
    await page.getByRole("button", { name: "Next" }).click()
    await page.getByText("Page 2 of 2 (11 in all)").waitFor()
    await page.locator("table.list tbody tr").nth(1).waitFor({ state: "detached" })
    expect(await names()).toEqual(["invert"])
    await page.getByLabel("Tag").fill("nothing-has-this")
    await page.getByRole("button", { name: "Filter" }).click()
    await page.getByText("No workflows match these filters.").waitFor()
  })

  it("creates and deletes a template, and submits from one", async () => {
    await go("/templates", "Templates")
    await page.getByLabel("Name").fill("inverter")
    await page.getByLabel("Description").fill("Invert a photo")
    await page.getByLabel(/Workflow file/).setInputFiles(jsonFile("invert.json", invertWorkflow))
    await page.getByRole("button", { name: "Create template" }).click()
    const row = page.getByRole("row", { name: /inverter/ })
    await row.waitFor()
    await shoot("templates")
    await row.getByRole("button", { name: "Delete template inverter" }).click()
    await row.getByRole("button", { name: "Confirm delete inverter" }).click()
    await row.waitFor({ state: "detached" })
    // The dev template "demo" remains, and submitting from it renders its form.
    await page.getByRole("row", { name: /demo/ }).getByRole("link", { name: "Submit" }).click()
    await page.getByLabel(/^color/).selectOption("16777215")
    await page.getByRole("button", { name: "Submit workflow" }).click()
    await badge("completed").waitFor()
  })

  it("creates, disables and deletes a runner, with its history", async () => {
    await go("/runners", "Runners")
    const demo = page.getByRole("article", { name: "Runner local simulated ComfyUI" })
    const endpoint = await demo.locator("dd code").first().textContent()
    // What the probe found: the simulated ComfyUI's version and device.
    await demo.locator("dd", { hasText: /^0\.3\.64 on cpu$/ }).waitFor()
    await demo.getByText(/Recent history/).click()
    await demo.getByRole("link", { name: "demo" }).waitFor()
    await page.getByLabel("Name", { exact: true }).fill("second")
    await page.getByLabel(/Endpoint/).fill(endpoint!)
    await page.getByLabel(/Tags/).fill("GPU, sdxl")
    await page.getByLabel(/Headers/).fill("X-Api-Key: secret")
    await page.getByRole("button", { name: "Create runner" }).click()
    const second = page.getByRole("article", { name: "Runner second" })
    await second.getByText("gpu").waitFor()
    await second.getByRole("button", { name: "Disable second" }).click()
    await second.locator(".badge", { hasText: "disabled" }).waitFor()
    await page.getByText("No managed runners are offered to your tier at the moment.").waitFor()
    await shoot("runners")
    await second.getByRole("button", { name: "Delete second" }).click()
    await second.getByRole("button", { name: "Confirm delete second" }).click()
    await second.waitFor({ state: "detached" })
  })

  it("shows each parameter's type: a checkbox for a BOOLEAN (its state sent as true or false), a number field for an INT", async () => {
    const switchWorkflow = {
      "1": { class_type: "PrimitiveBoolean", inputs: { value: "$text(flag)" } },
      "2": { class_type: "PreviewAny", inputs: { source: ["1", 0] } },
      "3": { class_type: "EmptyImage", inputs: { width: "$text(width, 16)", height: 16, batch_size: 1, color: 0 } },
      "4": { class_type: "SaveImage", inputs: { images: ["3", 0], filename_prefix: "dash/switch" } }
    }
    for (const tick of [true, false]) {
      await submit(`switch-${tick}`, switchWorkflow, async () => {
        const flag = page.getByRole("checkbox", { name: /^flag \(text, BOOLEAN; node 1\.value\)/ })
        expect(await flag.isChecked()).toBe(false)
        const width = page.getByRole("spinbutton", { name: /^width \(text, INT 1 to 16384, default 16;/ })
        expect([await width.getAttribute("min"), await width.getAttribute("max"), await width.getAttribute("step")]).toEqual(["1", "16384", "1"])
        if (tick) await flag.check()
        if (tick) await shoot("submit-typed")
      })
      await badge("completed").waitFor()
      await page.getByRole("row", { name: new RegExp(`\\$text\\(flag\\)\\s+${tick}`) }).waitFor()
    }
  })

  it("shows the running node's live preview while the workflow runs, and hides it when it ends", async () => {
    // The simulated ComfyUI of dev mode sends a preview image (8x8 PNG) with every progress step.
    await submit("preview", sleepWorkflow(3))
    const preview = page.getByTestId("live-preview")
    await preview.waitFor()
    expect(await preview.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth)).toBe(8)
    await page.getByText("Live preview of node 2").waitFor()
    await shoot("live-preview")
    await badge("completed").waitFor()
    await preview.waitFor({ state: "detached" })
  })

  it("shows the tier's limits and usage, and links to the API reference", async () => {
    await go("/account", "Account")
    const row = (label: string) => page.locator("tbody tr", { has: page.getByRole("rowheader", { name: label, exact: true }) })
    await row("Templates").waitFor()
    expect(await row("Templates").locator("td").allTextContents()).toEqual([" 1", "200"])
    expect(await row("Runners").locator("td").allTextContents()).toEqual([" 1", "20"])
    await shoot("account")
    expect(await page.getByRole("link", { name: "OpenAPI" }).getAttribute("href")).toBe("/v1/openapi.json")
    await page.getByRole("link", { name: "API docs" }).click()
    await page.waitForURL(/\/docs$/)
    await page.goBack()
    await page.getByRole("heading", { name: "Account" }).waitFor()
  })

  it("signs out with the server's message when the token is revoked mid-session", async () => {
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
    const me = (await (await fetch(`${server.dashboard}v1/user`, { headers: { authorization: `Bearer ${server.token}` } })).json()) as { id: string }
    const tokens = (await (await fetch(`${server.dashboard}admin/v1/users/${me.id}/tokens`, { headers: admin })).json()) as Array<{ id: string }>
    expect(tokens).toHaveLength(1)
    expect((await fetch(`${server.dashboard}admin/v1/tokens/${tokens[0]!.id}`, { method: "DELETE", headers: admin })).status).toBe(204)
    await page.getByRole("link", { name: "Workflows" }).click()
    await page.getByRole("alert").filter({ hasText: "Signed out: Invalid token" }).waitFor()
    await page.getByLabel("API token").waitFor()
    expect(await page.evaluate(() => sessionStorage.getItem("wes.token"))).toBeNull()
  })
})
