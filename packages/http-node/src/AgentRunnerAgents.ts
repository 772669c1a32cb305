/**
 * Core's `RunnerAgents` over the agents connected to this instance (AgentHub.ts): `provision`
 * posts the model files and follows the agent's NDJSON progress, `cleanup` posts a run's files;
 * `status` reads the presence store, so any instance shows what the agent last reported wherever
 * it is connected. A runner whose agent is not connected here is unreachable from here.
 */
import { AgentPresence, ProvisionFailed, RunnerAgents, RunnerUnreachable } from "@wes/core"
import { AGENT_NOT_CONNECTED } from "@wes/runner-client"
import { AGENT_CLEANUP_PATH, AGENT_PROVISION_PATH, type CleanupRequest, ProvisionLine } from "@wes/runner-client/agent-protocol"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { callJson, callLines } from "./AgentCalls.js"
import { AgentHub } from "./AgentHub.js"

const decodeLine = Schema.decodeUnknownOption(Schema.fromJsonString(ProvisionLine))

/** `RunnerAgents` on the hub and the presence store. */
export const makeRunnerAgents = Effect.gen(function*() {
  const hub = yield* AgentHub
  const presence = yield* AgentPresence
  const settings = hub.settings
  const unreachable = (runnerId: string, message: string) => new RunnerUnreachable({ runner_id: runnerId, message })
  const sessionOf = (runnerId: string) =>
    Effect.suspend(() => {
      const link = hub.link(runnerId)
      return link === undefined ? Effect.fail(unreachable(runnerId, AGENT_NOT_CONNECTED)) : Effect.succeed(link.session)
    })

  return RunnerAgents.of({
    connected: (runnerId) => hub.link(runnerId) !== undefined,
    status: (runnerId) =>
      presence.find(runnerId).pipe(
        Effect.map((found) =>
          Option.flatMap(found, (p) =>
            p.status === null || p.reported_at === null
              ? Option.none()
              : Option.some({ ...p.status, connected: p.live, reported_at: p.reported_at }))),
        Effect.catch((e) => Effect.as(Effect.logWarning("could not read an agent's status", { runner_id: runnerId, error: e.message }), Option.none()))
      ),
    provision: (runnerId, models, onProgress) =>
      Effect.gen(function*() {
        const session = yield* sessionOf(runnerId)
        const run = Effect.runPromiseWith(yield* Effect.context<never>())
        let end: ProvisionLine | undefined
        yield* callLines(session, { method: "POST", path: AGENT_PROVISION_PATH, body: { models } }, {
          maxBytes: settings.maxAnswerBytes,
          idleMs: settings.provisionIdleMs
        }, async (text) => {
          const line = decodeLine(text)
          if (Option.isNone(line)) throw new Error(`the agent sent a provisioning line that is not one: ${text.slice(0, 200)}`)
          if (line.value.type === "progress") {
            const { folder, filename, bytes, total } = line.value
            await run(onProgress({ folder, filename, bytes, total }))
          } else end = line.value
        }).pipe(Effect.mapError((e) => unreachable(runnerId, `provisioning: ${e.message}`)))
        if (end === undefined) return yield* Effect.fail(unreachable(runnerId, "provisioning: the agent ended without saying done or failed"))
        if (end.type === "failed") {
          return yield* Effect.fail(new ProvisionFailed({ runner_id: runnerId, filename: end.filename, message: `${end.filename}: ${end.message}` }))
        }
      }),
    cleanup: (runnerId, files) =>
      Effect.gen(function*() {
        const session = yield* sessionOf(runnerId)
        const body: CleanupRequest = {
          prompt_id: files.prompt_id,
          outputs: files.outputs.map((f) => ({ filename: f.filename, subfolder: f.subfolder, type: f.type })),
          inputs: files.inputs.map((f) => ({ filename: f.name, subfolder: f.subfolder, type: f.type }))
        }
        yield* callJson(session, { method: "POST", path: AGENT_CLEANUP_PATH, body }, { maxBytes: settings.maxAnswerBytes, timeoutMs: settings.callMs }).pipe(
          Effect.mapError((e) => unreachable(runnerId, `cleanup: ${e.message}`))
        )
      })
  })
})

/** `RunnerAgents` over `AgentHub` and `AgentPresence`. */
export const RunnerAgentsLive: Layer.Layer<RunnerAgents, never, AgentHub | AgentPresence> = Layer.effect(RunnerAgents, makeRunnerAgents)
