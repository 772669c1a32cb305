/**
 * A registered runner probed again: at each (re)connection of its driver (a ComfyUI restart may
 * be an upgrade or a downgrade) and with every read of its capabilities. What changed is stored
 * (one write, only then) and used from there on: which API cancels go through, whether the runner
 * may take work. A failed probe changes nothing: the runner may just be down.
 */
import * as Effect from "effect/Effect"
import type { RunnerComfyUI } from "../domain/ComfyUIVersion.js"
import { ManagedRunnerRepository } from "../ports/ManagedRunnerRepository.js"
import type { RunnerTarget } from "../domain/Runner.js"
import { RunnerGateway } from "../ports/RunnerGateway.js"
import { RunnerRepository } from "../ports/RunnerRepository.js"

const same = (a: RunnerComfyUI | null | undefined, b: RunnerComfyUI): boolean =>
  a !== null && a !== undefined && a.version === b.version && a.jobs_api === b.jobs_api &&
  JSON.stringify(a.devices) === JSON.stringify(b.devices)

/** Probes `runner` and stores its ComfyUI when it differs from what the target carries. Never fails. */
export const observeComfyUI = (
  runner: RunnerTarget
): Effect.Effect<void, never, RunnerGateway | RunnerRepository | ManagedRunnerRepository> =>
  Effect.gen(function*() {
    const gateway = yield* RunnerGateway
    const seen = yield* gateway.probe(runner)
    if (same(runner.comfyui, seen)) return
    const stored = runner.kind === "user"
      ? yield* Effect.flatMap(RunnerRepository, (repo) => repo.setComfyUI(runner.id, seen))
      : yield* Effect.flatMap(ManagedRunnerRepository, (repo) => repo.setComfyUI(runner.id, seen))
    if (stored && runner.comfyui?.version !== seen.version) {
      yield* Effect.logInfo("the runner's ComfyUI version changed", {
        runner_id: runner.id,
        from: runner.comfyui?.version ?? null,
        to: seen.version
      })
    }
  }).pipe(
    Effect.catch((e) => Effect.logWarning("could not probe the runner's ComfyUI", { runner_id: runner.id, error: e.message }))
  )
