/**
 * WES with two unmodified ComfyUI processes: the version a registered runner shows, tag routing
 * between them, and one of them killed (SIGKILL) in the middle of a run, then started again on the
 * same port.
 */
import { RealComfyUI } from "@wes/runner-client/testing"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { readJson, type RunnerJson, workflowForm } from "../harness.js"
import { addRunner, createUser, createWorkflow, DATABASE_URL, type Instance, killAll, startInstance } from "../instances.js"
import { blurChain, comfyHistory, comfyMessages, comfyQueue, detail, onComfyUI, setup, smoke, unique, waitStatus } from "./suite.js"

describe.skipIf(setup === undefined)(onComfyUI("WES with two real ComfyUI processes"), () => {
  let alpha: RealComfyUI
  let beta: RealComfyUI
  let wes: Instance

  beforeAll(async () => {
    // Together: a ComfyUI empties the temp directory they share when it starts, but nothing here
    // writes temp files.
    ;[alpha, beta, wes] = await Promise.all([
      RealComfyUI.start(setup!),
      RealComfyUI.start(setup!),
      startInstance("wes", DATABASE_URL, { WES_STORAGE: "memory" })
    ])
  })
  afterAll(async () => {
    await killAll()
    await Promise.all([alpha?.close(), beta?.close()])
  })

  it("routes workflows by tag: each runs on the ComfyUI whose runner carries its tags", async () => {
    const user = await createUser(wes)
    const ra = await addRunner(wes, user, "alpha", alpha.url, ["alpha", "cpu"])
    const rb = await addRunner(wes, user, "beta", beta.url, ["beta", "cpu"])
    const { token, color } = unique()
    const created = await Promise.all(["alpha", "beta", "alpha", "beta"].map((tag, i) =>
      createWorkflow(wes, user, smoke(color + i, `${token}/${tag}${i}`), { tags: tag }).then((w) => ({ tag, w }))))
    for (const { tag, w } of created) {
      const done = await waitStatus(wes, user, w.id)
      expect(done).toMatchObject({ status: "completed", user_runner_id: tag === "alpha" ? ra.id : rb.id })
      const [here, there] = tag === "alpha" ? [alpha, beta] : [beta, alpha]
      expect(comfyMessages(await comfyHistory(here, w.id)).at(-1)).toBe("execution_success")
      expect(await comfyHistory(there, w.id)).toBeUndefined()
    }
    // A tag no runner carries is refused when the workflow is created.
    const refused = await wes.fetch("/v1/workflow", { method: "POST", headers: user.auth, body: workflowForm({ name: "x", tags: "gpu" }, smoke(color, `${token}/gpu`)) })
    expect(refused.status).toBe(400)
    expect((await readJson<{ message: string }>(refused)).message).toContain("No runner available")
  })

  it("shows the registered runner's ComfyUI version and devices as the running ComfyUI reports them, and whether it has the jobs API", async () => {
    const user = await createUser(wes)
    const stats = await readJson<{ system: { comfyui_version: string }; devices: Array<{ name: string; type: string }> }>(await fetch(`${alpha.url}/system_stats`))
    const jobs = await fetch(`${alpha.url}/api/jobs?status=in_progress&limit=1`)
    const registered = await addRunner(wes, user, "versioned", alpha.url)
    expect(registered.comfyui).toEqual({
      version: stats.system.comfyui_version,
      devices: stats.devices.map((d) => expect.objectContaining({ name: d.name, type: d.type })),
      jobs_api: jobs.status === 200
    })
    const shown = await readJson<RunnerJson>(await wes.fetch(`/v1/runner/${registered.id}`, { headers: user.auth }))
    expect(shown.comfyui?.version).toBe(stats.system.comfyui_version)
    // The supported range starts at 0.3.45; before 0.3.57 the detail warns about the cancel race.
    const [major, minor, patch] = stats.system.comfyui_version.split(".").map(Number)
    expect(shown.warning === null).toBe(major! > 0 || minor! > 3 || patch! >= 57)
  })

  it("ComfyUI killed mid-run: the workflow ends RunnerLost, and new work runs once ComfyUI is back", async () => {
    const user = await createUser(wes)
    await addRunner(wes, user, "crashing", alpha.url)
    const { token, color } = unique()
    const lost = await createWorkflow(wes, user, blurChain(color, `${token}/lost`, 6))
    await waitStatus(wes, user, lost.id, ["running"])
    expect((await comfyQueue(alpha)).running).toEqual([lost.id])

    await alpha.kill()
    await alpha.restart()
    const done = await waitStatus(wes, user, lost.id)
    expect(done).toMatchObject({ status: "failed", exception_type: "RunnerLost" })
    expect(done.exception_message).toContain("no longer knows this prompt")

    const next = await createWorkflow(wes, user, smoke(color, `${token}/next`))
    expect((await waitStatus(wes, user, next.id)).status).toBe("completed")
    expect(comfyMessages(await comfyHistory(alpha, next.id)).at(-1)).toBe("execution_success")
    expect((await detail(wes, user, lost.id)).status).toBe("failed")
  })
})
