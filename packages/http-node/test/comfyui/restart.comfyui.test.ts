/**
 * WES on PostgreSQL restarted while a real ComfyUI runs its prompt: once gracefully (SIGTERM,
 * a deploy) and once by a crash (SIGKILL). The next instance takes the runner over, follows the
 * prompt to its end, and ComfyUI receives each prompt exactly once (it logs "got prompt" for
 * every POST /prompt). PostgreSQL itself keeps running: only WES restarts.
 */
import { RealComfyUI } from "@wes/runner-client/testing"
import { describe, expect, it } from "vitest"
import { readJson } from "../harness.js"
import { addRunner, createUser, createWorkflow, type Instance, startInstance, type TestUser } from "../instances.js"
import { processSuite } from "../process-suite.js"
import { blurChain, comfyHistory, comfyMessages, onComfyUI, setup, unique, waitStatus } from "./suite.js"

const suite = processSuite()

describe.skipIf(setup === undefined)(onComfyUI("WES restarted while ComfyUI runs its prompt"), () => {
  it("a graceful restart and a crash of the only instance: each prompt ends completed, posted to ComfyUI once", async () => {
    const database = await suite.database()
    const [real, first] = await Promise.all([RealComfyUI.start(setup!).then(suite.closeAfter), startInstance("A", database.url())])
    const user = await createUser(first)
    await addRunner(first, user, "comfyui", real.url)
    const { token, color } = unique()

    /** Runs a long prompt, stops `instance` with `signal` while it runs, starts `next`; the prompt must complete. */
    const restartDuring = async (instance: Instance, signal: NodeJS.Signals, next: string, u: TestUser, i: number) => {
      const w = await createWorkflow(instance, u, blurChain(color + i, `${token}/restart${i}`, 6))
      await waitStatus(instance, u, w.id, ["running"])
      instance.child.kill(signal)
      await instance.exited
      const successor = await startInstance(next, database.url())
      const done = await waitStatus(successor, u, w.id)
      expect(done).toMatchObject({ status: "completed", error_node: null, exception_type: null })
      const { outputs } = await readJson<{ outputs: Array<{ filename: string }> }>(await successor.fetch(`/v1/workflow/${w.id}/outputs`, { headers: u.auth }))
      expect(outputs.map((o) => o.filename)).toEqual([`restart${i}_00001_.png`])
      expect(comfyMessages(await comfyHistory(real, w.id)).at(-1)).toBe("execution_success")
      return successor
    }

    const second = await restartDuring(first, "SIGTERM", "B", user, 1)
    expect(real.promptsReceived()).toBe(1)
    await restartDuring(second, "SIGKILL", "C", user, 2)
    expect(real.promptsReceived()).toBe(2)
  })
})
