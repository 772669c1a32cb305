/**
 * One running agent: the model store (when a models folder is configured), the HTTP/2 server of
 * the protocol's routes, and the dialer that keeps one WebSocket to WES open. `startAgent` is what
 * `wes-agent` runs and what tests of the WES side start in-process; `close()` stops dialling,
 * closes the connection (its tunnels with it) and the model store's HTTP connections.
 */
import { makeAgentServer } from "./AgentServer.js"
import type { BackoffSettings } from "./Backoff.js"
import { cleanupRun } from "./Cleanup.js"
import { dial } from "./Dial.js"
import { type AgentLog, stderrLog } from "./Log.js"
import { openModelStore } from "./ModelStore.js"
import type { AgentOptions } from "./Options.js"
import { FolderNotConfigured } from "./Options.js"
import { provisionModels } from "./Provision.js"
import { readStatus } from "./Status.js"

/** What tests (and embedders) may tune beyond the command line. */
export interface AgentRuntimeOptions {
  readonly log?: AgentLog
  readonly backoff?: BackoffSettings
  readonly heartbeatMs?: number
  /** The `nvidia-smi` to run (default: `nvidia-smi` on PATH). */
  readonly nvidiaSmi?: string
}

export interface AgentHandle {
  /** Whether the agent's connection to WES is open now. */
  readonly connected: () => boolean
  readonly close: () => Promise<void>
}

export const startAgent = async (options: AgentOptions & AgentRuntimeOptions): Promise<AgentHandle> => {
  const log = options.log ?? stderrLog
  const modelsDir = options.folders.models
  const models = modelsDir === null
    ? null
    : await openModelStore({ modelsDir, budgetBytes: options.modelBudgetBytes, allowPrivateUrls: options.allowPrivateModelUrls })
  const server = makeAgentServer(options.comfyui, {
    status: () => readStatus({ options, models, nvidiaSmi: options.nvidiaSmi ?? "nvidia-smi" }),
    provision: async (request, onLine, signal) => {
      if (models === null) throw new FolderNotConfigured("models")
      await provisionModels(models, request.models, onLine, signal)
    },
    cleanup: (request) => cleanupRun(options, request, log)
  }, log)
  const dialer = dial({
    server: options.server,
    token: options.token,
    log,
    ...(options.backoff !== undefined ? { backoff: options.backoff } : {}),
    ...(options.heartbeatMs !== undefined ? { heartbeatMs: options.heartbeatMs } : {}),
    onOpen: server.serve
  })
  return {
    connected: dialer.connected,
    close: async () => {
      await dialer.close()
      server.close()
      await models?.close()
    }
  }
}
