/**
 * `WES_DEV=1`: a simulated ComfyUI runner in the process, a demo user with a token, and curl lines
 * that run a workflow end to end. For trying WES on a laptop; never for production.
 */
import { AccountService, RunnerService, TemplateService } from "@wes/core"
import { FakeComfyUI, slowWorkflow } from "@wes/runner-client/testing"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

const banner = (base: string, token: string) => {
  const workflow = JSON.stringify(slowWorkflow({ seconds: 2, steps: 10, prefix: "wes-dev/run" }))
  return [
    "",
    "WES dev mode: a simulated ComfyUI runner is registered for a demo user (pro tier).",
    `Demo token: ${token}`,
    "",
    `Dashboard: ${base}/  (sign in with the demo token; Submit -> template "demo" -> Submit workflow)`,
    "",
    "Try it (copy these lines into a shell):",
    `  export WES=${base} TOKEN=${token}`,
    `  echo '${workflow}' > /tmp/wes-demo.json`,
    `  curl -s $WES/v1/user -H "Authorization: Bearer $TOKEN"`,
    `  ID=$(curl -s $WES/v1/workflow -H "Authorization: Bearer $TOKEN" -F name=demo -F workflow_json=@/tmp/wes-demo.json | sed -E 's/.*"id":"([^"]+)".*/\\1/')`,
    `  curl -sN $WES/v1/workflow/$ID/subscribe -H "Authorization: Bearer $TOKEN"`,
    `  curl -s $WES/v1/workflow/$ID -H "Authorization: Bearer $TOKEN"`,
    `  OUT=$(curl -s $WES/v1/workflow/$ID/outputs -H "Authorization: Bearer $TOKEN" | sed -E 's/.*"id":"([^"]+)".*/\\1/')`,
    `  curl -s $WES/v1/workflow/$ID/outputs/$OUT -H "Authorization: Bearer $TOKEN" -o out.png && file out.png`,
    "",
    `API reference: ${base}/docs   OpenAPI: ${base}/v1/openapi.json`,
    ""
  ].join("\n")
}

/** The demo template: the slow workflow with a text and a choice parameter, for the dashboard. */
const demoTemplate = () => {
  const workflow = slowWorkflow({ seconds: 2, steps: 10, prefix: "$text(prefix, wes-dev/run)" })
  return {
    name: "demo",
    description: "A 2-second simulated run that writes one image; pick its color",
    body: { ...workflow, "1": { ...workflow["1"]!, inputs: { ...workflow["1"]!.inputs, color: "#choice(color, 0, 16777215)" } } }
  }
}

/** Starts the simulated runner and the demo account once the server listens at `base`. */
export const devLayer = (base: string): Layer.Layer<never, never, AccountService | RunnerService | TemplateService> =>
  Layer.effectDiscard(Effect.gen(function*() {
    // Its progress steps send preview images, as a sampler's do: the dashboard shows them live.
    const fake = yield* FakeComfyUI.scoped({ previews: true })
    const accounts = yield* AccountService
    const runners = yield* RunnerService
    const templates = yield* TemplateService
    const setup = Effect.gen(function*() {
      const user = yield* accounts.createUser({ tier: "pro", email: "demo@localhost" })
      const issued = yield* accounts.issueToken(user.id, { name: "dev" })
      yield* runners.create(user, { name: "local simulated ComfyUI", endpoint: fake.url, tags: ["dev"] })
      yield* templates.create(user, demoTemplate())
      return issued.token
    })
    const token = yield* setup.pipe(Effect.orDie)
    // The token goes to the terminal on purpose (dev mode), never through the request log.
    yield* Effect.sync(() => process.stdout.write(banner(base, token) + "\n"))
  }))
