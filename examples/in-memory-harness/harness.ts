/**
 * The whole of WES in memory for your tests: the use cases and the dispatcher over the memory
 * store, the real ComfyUI client (HTTP + WebSocket), and a protocol-faithful fake ComfyUI on a
 * random local port. A fresh one per test costs a few milliseconds; nothing is shared.
 */
import { createWes, type Wes, type WesUser } from "@wes/core"
import { RunnerGatewayNode } from "@wes/runner-client"
import { FakeComfyUI } from "@wes/runner-client/testing"
import { MemoryStoreLive } from "@wes/storage-memory"
import { readFile } from "node:fs/promises"

export interface Harness {
  /** WES, through its promise facade (Effect users: `embeddedLayer` from @wes/core composes the same). */
  readonly wes: Wes
  /** The fake ComfyUI: inspect `submissions`, `uploads`, `files`; inject faults with `failNode`, `hold`, `restart`... */
  readonly comfyui: FakeComfyUI
  /** A pro-tier user with the fake registered as its runner. */
  readonly user: WesUser
  readonly close: () => Promise<void>
}

export const startHarness = async (): Promise<Harness> => {
  const comfyui = await FakeComfyUI.start()
  const wes = await createWes({
    store: MemoryStoreLive,
    // Short timeouts and backoff: a test that goes wrong fails fast instead of waiting for production budgets.
    gateway: RunnerGatewayNode({ requestTimeout: "2 seconds", reconnectInitialDelay: "20 millis", reconnectMaxDelay: "200 millis" }),
    dispatcher: {
      scanInterval: "100 millis",
      claimInterval: "100 millis",
      reconcileInterval: "250 millis",
      retryDelay: "20 millis",
      retryDelayMax: "100 millis"
    }
  })
  const user = await wes.createUser({ tier: "pro" })
  await wes.registerRunner(user, { name: "fake comfyui", endpoint: comfyui.url })
  return {
    wes,
    comfyui,
    user,
    close: async () => {
      await wes.close()
      await comfyui.close()
    }
  }
}

/** One of this package's workflow files (API format, as ComfyUI's "Export (API)" saves it), as text. */
export const workflowFile = (name: string): Promise<string> => readFile(new URL(`./workflows/${name}`, import.meta.url), "utf8")
