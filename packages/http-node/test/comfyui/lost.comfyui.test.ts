/**
 * A ComfyUI killed for good while it runs a prompt and holds another (issue 32): with
 * WES_RUNNER_LOST_AFTER shortened to 5 seconds by configuration, `wes serve` gives both up once
 * the runner has not answered that long: `failed` with `RunnerLost` (no other runner to retry on).
 */
import { RealComfyUI } from "@wes/runner-client/testing"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { addRunner, createUser, createWorkflow, DATABASE_URL, type Instance, killAll, startInstance } from "../instances.js"
import { blurChain, comfyQueue, onComfyUI, setup, smoke, unique, waitStatus } from "./suite.js"

const LOST_AFTER_MS = 5_000

describe.skipIf(setup === undefined)(onComfyUI("WES with a ComfyUI that is gone for good"), () => {
  let comfy: RealComfyUI
  let wes: Instance

  beforeAll(async () => {
    ;[comfy, wes] = await Promise.all([
      RealComfyUI.start(setup!),
      startInstance("wes", DATABASE_URL, { WES_STORAGE: "memory", WES_RUNNER_LOST_AFTER: `${LOST_AFTER_MS / 1000} seconds` })
    ])
  })
  afterAll(async () => {
    await killAll()
    await comfy?.close()
  })

  it("ComfyUI killed and never started again: its running and queued workflows end failed with RunnerLost after WES_RUNNER_LOST_AFTER", async () => {
    const user = await createUser(wes)
    await addRunner(wes, user, "doomed", comfy.url)
    const { token, color } = unique()
    const running = await createWorkflow(wes, user, blurChain(color, `${token}/running`, 12))
    await waitStatus(wes, user, running.id, ["running"])
    const queued = await createWorkflow(wes, user, smoke(color + 1, `${token}/queued`))
    await waitStatus(wes, user, queued.id, ["queued"])
    expect(await comfyQueue(comfy)).toEqual({ running: [running.id], pending: [queued.id] })

    const killedAt = Date.now()
    await comfy.kill()
    for (const w of [running, queued]) {
      const done = await waitStatus(wes, user, w.id)
      expect(done).toMatchObject({ status: "failed", exception_type: "RunnerLost", error_node: null })
      expect(done.exception_message).toContain("The runner could not be reached for 5s")
      expect(Date.parse(done.completed_at!) - killedAt).toBeGreaterThanOrEqual(LOST_AFTER_MS)
    }
  })
})
