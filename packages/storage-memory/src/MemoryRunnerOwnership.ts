/** One process drives every runner: ownership always succeeds and is never lost. */
import { RunnerOwnership } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"

export const MemoryRunnerOwnership: Layer.Layer<RunnerOwnership> = Layer.sync(RunnerOwnership, () => {
  const instanceId = `wes-${globalThis.crypto.randomUUID().slice(0, 8)}`
  return RunnerOwnership.of({
    instanceId,
    acquire: (runnerId) =>
      Effect.succeed(Option.some({ clientId: `${instanceId}-${runnerId}`, lost: Effect.never, held: () => true }))
  })
})
