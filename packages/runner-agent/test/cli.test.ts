/**
 * The `wes-agent` command line: what an operator types, the defaults it gets, and the one-line
 * errors for what it cannot start with.
 */
import * as path from "node:path"
import { parseByteSize, parseCommand } from "@wes/runner-agent"
import { describe, expect, it } from "vitest"

const TOKEN = { WES_RUNNER_TOKEN: "wes_rt_abc" }
const BASE = ["--comfyui", "http://127.0.0.1:8188", "--server", "https://wes.example.com"]

const run = (argv: Array<string>, env: NodeJS.ProcessEnv = TOKEN) => {
  const command = parseCommand(argv, env)
  if (command._tag !== "run") throw new Error(`expected run, got ${command._tag}`)
  return command.options
}
const error = (argv: Array<string>, env: NodeJS.ProcessEnv = TOKEN): string => {
  try {
    parseCommand(argv, env)
  } catch (e) {
    expect((e as Error).message).not.toContain("\n")
    return (e as Error).message
  }
  throw new Error("expected an error")
}

describe("wes-agent's command line", () => {
  it("takes the two URLs and the token from the environment, with defaults", () => {
    const options = run(BASE)
    expect(options.comfyui.href).toBe("http://127.0.0.1:8188/")
    expect(options.server.href).toBe("https://wes.example.com/")
    expect(options.token).toBe("wes_rt_abc")
    expect(options).toMatchObject({ modelBudgetBytes: null, cleanup: true, allowPrivateModelUrls: false })
    expect(options.folders).toEqual({ comfyui: null, models: null, output: null, temp: null, input: null })
  })

  it("derives ComfyUI's folders from --comfyui-dir unless given one by one", () => {
    const options = run([...BASE, "--comfyui-dir", "/srv/ComfyUI", "--output-dir", "/data/out", "--model-budget", "200GB", "--cleanup", "off", "--allow-private-model-urls"])
    expect(options.folders).toEqual({
      comfyui: "/srv/ComfyUI",
      models: path.join("/srv/ComfyUI", "models"),
      output: "/data/out",
      temp: path.join("/srv/ComfyUI", "temp"),
      input: path.join("/srv/ComfyUI", "input")
    })
    expect(options).toMatchObject({ modelBudgetBytes: 200e9, cleanup: false, allowPrivateModelUrls: true })
  })

  it("reads WES_AGENT_* when a flag is absent; a flag wins", () => {
    const options = run(["--server", "https://a.example"], {
      ...TOKEN,
      WES_AGENT_COMFYUI: "http://127.0.0.1:9000",
      WES_AGENT_SERVER: "https://b.example",
      WES_AGENT_MODEL_BUDGET: "1.5TiB",
      WES_AGENT_ALLOW_PRIVATE_MODEL_URLS: "true"
    })
    expect(options.comfyui.port).toBe("9000")
    expect(options.server.hostname).toBe("a.example")
    expect(options.modelBudgetBytes).toBe(1.5 * 2 ** 40)
    expect(options.allowPrivateModelUrls).toBe(true)
  })

  it("answers --help and --version", () => {
    expect(parseCommand(["--help"], {})._tag).toBe("help")
    expect(parseCommand(["--version"], {})._tag).toBe("version")
  })

  it("refuses what it cannot start with, in one line naming the problem", () => {
    expect(error([...BASE, "--token", "wes_rt_x"])).toBe("unknown flag --token (see wes-agent --help)")
    expect(error([...BASE, "extra"])).toContain("unexpected argument")
    expect(error(["--server", "https://wes.example.com"])).toContain("--comfyui is required")
    expect(error(["--comfyui", "127.0.0.1:8188", "--server", "https://x"])).toContain("--comfyui must be an http:// or https:// URL")
    expect(error([...BASE, "--comfyui"])).toContain("--comfyui")
    expect(error(["--comfyui", "https://127.0.0.1:8443", "--server", "https://x"])).toContain("--comfyui must be an http:// URL")
    expect(error(BASE, {})).toContain("WES_RUNNER_TOKEN is not set")
    expect(error(BASE, { WES_RUNNER_TOKEN: "wes_at_api" })).toContain("not a runner token")
    expect(error([...BASE, "--model-budget", "lots"])).toContain("--model-budget must be a size")
    expect(error([...BASE, "--cleanup", "yes"])).toContain("--cleanup must be on or off")
  })
})

describe("sizes", () => {
  it("reads decimal and binary units", () => {
    expect(parseByteSize("200GB")).toBe(200e9)
    expect(parseByteSize("512 MiB")).toBe(512 * 2 ** 20)
    expect(parseByteSize("1024")).toBe(1024)
    expect(parseByteSize("0")).toBeUndefined()
    expect(parseByteSize("10 GX")).toBeUndefined()
    expect(parseByteSize("-1GB")).toBeUndefined()
  })
})
