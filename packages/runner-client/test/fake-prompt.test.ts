/** The fake's POST /prompt: accepted shapes, every validation error shape, prompt ids, priorities. */
import { saveImageWorkflow, solidPng } from "@wes/runner-client/testing"
import { describe, expect, it } from "vitest"
import { http, useFake, uuid } from "./harness.js"

type Rejected = {
  error: { type: string; message: string; details: string; extra_info: Record<string, unknown> }
  node_errors: Record<string, { errors: Array<{ type: string; message: string; details: string; extra_info: Record<string, unknown> }>; dependent_outputs: Array<string>; class_type: string }>
}

const submit = async (prompt: unknown, extra: Record<string, unknown> = {}, options = {}) => {
  const fake = await useFake(options)
  const r = await http(fake).post("/prompt", { prompt, ...extra })
  return { fake, r }
}

describe("fake ComfyUI: POST /prompt", () => {
  it("accepts a valid prompt with its prompt_id, the counter as number and empty node_errors", async () => {
    const id = uuid()
    const { fake, r } = await submit(saveImageWorkflow(), { prompt_id: id, client_id: "c1" })
    expect(r.status).toBe(200)
    expect(r.json()).toEqual({ prompt_id: id, number: 0, node_errors: {} })
    await fake.whenFinished(id)
    const second = await http(fake).post("/prompt", { prompt: saveImageWorkflow({ prefix: "b" }) })
    expect(second.json<{ number: number; prompt_id: string }>().number).toBe(1)
    expect(second.json<{ prompt_id: string }>().prompt_id).toMatch(/^[0-9a-f-]{36}$/)
  })

  it("answers 400 no_prompt without a prompt, and still advances the counter", async () => {
    const fake = await useFake()
    const r = await http(fake).post("/prompt", { client_id: "x" })
    expect(r.status).toBe(400)
    expect(r.json()).toEqual({
      error: { type: "no_prompt", message: "No prompt provided", details: "No prompt provided", extra_info: {} },
      node_errors: {}
    })
    const ok = await http(fake).post("/prompt", { prompt: saveImageWorkflow() })
    expect(ok.json<{ number: number }>().number).toBe(1)
  })

  it("answers 400 invalid_prompt for an unknown class type and for a node without class_type", async () => {
    const unknown = await submit({ ...saveImageWorkflow(), "4": { class_type: "NoSuchNode", inputs: {} } })
    expect(unknown.r.status).toBe(400)
    expect(unknown.r.json()).toEqual({
      error: {
        type: "invalid_prompt",
        message: "Cannot execute because node NoSuchNode does not exist.",
        details: "Node ID '#4'",
        extra_info: {}
      },
      node_errors: {}
    })
    const missing = await submit({ "7": { inputs: {} } })
    expect(missing.r.json<Rejected>().error).toEqual({
      type: "invalid_prompt",
      message: "Cannot execute because a node is missing the class_type property.",
      details: "Node ID '#7'",
      extra_info: {}
    })
  })

  it("answers 400 invalid_prompt for a UI-format workflow", async () => {
    const { r } = await submit({ id: "a-uuid", nodes: [], links: [], version: 0.4 })
    expect(r.status).toBe(400)
    expect(r.json<Rejected>().error.type).toBe("invalid_prompt")
  })

  it("uses missing_node_type when configured like newer servers", async () => {
    const { r } = await submit({ "4": { class_type: "NoSuchNode", inputs: {}, _meta: { title: "My Node" } } }, {}, {
      unknownNodeError: "missing_node_type"
    })
    expect(r.json<Rejected>().error).toEqual({
      type: "missing_node_type",
      message: "Node 'My Node' not found. The custom node may not be installed.",
      details: "Node ID '#4'",
      extra_info: { node_id: "4", class_type: "NoSuchNode", node_title: "My Node" }
    })
  })

  it("answers 400 prompt_no_outputs when no node is an output", async () => {
    const { "3": _, ...noOutput } = saveImageWorkflow()
    const { r } = await submit(noOutput)
    expect(r.json()).toEqual({
      error: { type: "prompt_no_outputs", message: "Prompt has no outputs", details: "", extra_info: {} },
      node_errors: {}
    })
  })

  it("reports a value below min on the node that has it, with the output it blocks", async () => {
    const w = saveImageWorkflow()
    w["1"]!.inputs.width = 0
    const { r } = await submit(w)
    expect(r.status).toBe(400)
    const body = r.json<Rejected>()
    // The output's own reasons are empty (only upstream failed), so details is empty, as in ComfyUI.
    expect(body.error).toEqual({
      type: "prompt_outputs_failed_validation",
      message: "Prompt outputs failed validation",
      details: "",
      extra_info: {}
    })
    expect(body.node_errors).toEqual({
      "1": {
        errors: [{
          type: "value_smaller_than_min",
          message: "Value 0 smaller than min of 1",
          details: "width",
          extra_info: { input_name: "width", input_config: ["INT", { default: 512, min: 1, max: 16384, step: 1 }], received_value: 0 }
        }],
        dependent_outputs: ["3"],
        class_type: "EmptyImage"
      }
    })
  })

  it("reports value_bigger_than_max", async () => {
    const w = saveImageWorkflow()
    w["1"]!.inputs.color = 0x1000000
    const { r } = await submit(w)
    expect(r.json<Rejected>().node_errors["1"]!.errors[0]).toMatchObject({
      type: "value_bigger_than_max",
      message: "Value 16777216 bigger than max of 16777215",
      details: "color"
    })
  })

  it("reports invalid_input_type with Python's conversion message, and converts \"5\" to 5", async () => {
    const w = saveImageWorkflow()
    w["1"]!.inputs.width = "abc"
    const { r } = await submit(w)
    expect(r.json<Rejected>().node_errors["1"]!.errors[0]).toMatchObject({
      type: "invalid_input_type",
      message: "Failed to convert an input value to a INT value",
      details: "width, abc, invalid literal for int() with base 10: 'abc'",
      extra_info: { input_name: "width", received_value: "abc", exception_message: "invalid literal for int() with base 10: 'abc'" }
    })

    const fake = await useFake()
    fake.pauseQueue()
    const ok = saveImageWorkflow()
    ok["1"]!.inputs.width = "5"
    expect((await http(fake).post("/prompt", { prompt: ok })).status).toBe(200)
    const q = (await http(fake).get("/queue")).json<{ queue_pending: Array<[number, string, Record<string, { inputs: Record<string, unknown> }>]> }>()
    expect(q.queue_pending[0]![2]["1"]!.inputs.width).toBe(5)
  })

  it("reports required_input_missing, and puts the output's own reasons in details", async () => {
    const w = saveImageWorkflow()
    delete w["3"]!.inputs.images
    const { r } = await submit(w)
    const body = r.json<Rejected>()
    expect(body.error.details).toBe("Required input is missing: images")
    expect(body.node_errors).toEqual({
      "3": {
        errors: [{ type: "required_input_missing", message: "Required input is missing", details: "images", extra_info: { input_name: "images" } }],
        dependent_outputs: ["3"],
        class_type: "SaveImage"
      }
    })
  })

  it("reports value_not_in_list with the option list", async () => {
    const { r } = await submit({
      "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: 0 } },
      "2": { class_type: "ImageScale", inputs: { image: ["1", 0], upscale_method: "foo", width: 4, height: 4, crop: "disabled" } },
      "3": { class_type: "SaveImage", inputs: { images: ["2", 0], filename_prefix: "x" } }
    })
    expect(r.json<Rejected>().node_errors["2"]!.errors[0]).toMatchObject({
      type: "value_not_in_list",
      message: "Value not in list",
      details: "upscale_method: 'foo' not in ['nearest-exact', 'bilinear', 'area', 'bicubic', 'lanczos']"
    })
  })

  it("reports return_type_mismatch for a MASK linked into IMAGE", async () => {
    const { r } = await submit({
      "1": { class_type: "SolidMask", inputs: { value: 1, width: 8, height: 8 } },
      "3": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "x" } }
    })
    expect(r.json<Rejected>().node_errors["3"]!.errors[0]).toMatchObject({
      type: "return_type_mismatch",
      message: "Return type mismatch between linked nodes",
      details: "images, received_type(MASK) mismatch input_type(IMAGE)",
      extra_info: { input_name: "images", received_type: "MASK", linked_node: ["1", 0] }
    })
  })

  it("reports a link to a missing node as exception_during_validation (output) or _inner_validation (upstream)", async () => {
    const onOutput = saveImageWorkflow()
    onOutput["3"]!.inputs.images = ["9", 0]
    const a = (await submit(onOutput)).r.json<Rejected>()
    expect(a.node_errors["3"]!.errors[0]).toMatchObject({
      type: "exception_during_validation",
      message: "Exception when validating node",
      details: "'9'",
      extra_info: { exception_type: "KeyError" }
    })

    const upstream = saveImageWorkflow()
    upstream["2"]!.inputs.image = ["9", 0]
    const b = (await submit(upstream)).r.json<Rejected>()
    expect(b.node_errors["2"]!.errors[0]).toMatchObject({
      type: "exception_during_inner_validation",
      details: "'9'",
      // Recorded on the node whose link is broken, naming the downstream input that reached it.
      extra_info: { exception_type: "KeyError", input_name: "images", linked_node: ["2", 0] }
    })
    expect(b.node_errors["2"]!.dependent_outputs).toEqual(["3"])
  })

  it("reports bad_linked_input for a list that is not a pair", async () => {
    const w = saveImageWorkflow()
    w["3"]!.inputs.images = ["2", 0, 1]
    expect((await submit(w)).r.json<Rejected>().node_errors["3"]!.errors[0]!.type).toBe("bad_linked_input")
  })

  it("checks LoadImage files with custom_validation_failed, accepting subfolders and [type] annotations", async () => {
    const missing = await submit({
      "1": { class_type: "LoadImage", inputs: { image: "nope.png" } },
      "2": { class_type: "PreviewImage", inputs: { images: ["1", 0] } }
    })
    expect(missing.r.json<Rejected>().node_errors["1"]!.errors).toEqual([{
      type: "custom_validation_failed",
      message: "Custom validation failed for node",
      details: "image - Invalid image file: nope.png",
      extra_info: { input_name: "image" }
    }])

    const fake = await useFake()
    await http(fake).upload({ image: { name: "in.png", bytes: solidPng(4, 4, 0xff0000) }, subfolder: "wes" })
    await http(fake).upload({ image: { name: "out.png", bytes: solidPng(4, 4, 0xff0000) }, type: "output" })
    for (const image of ["wes/in.png", "wes/in.png [input]", "out.png [output]"]) {
      const r = await http(fake).post("/prompt", {
        prompt: { "1": { class_type: "LoadImage", inputs: { image } }, "2": { class_type: "PreviewImage", inputs: { images: ["1", 0] } } }
      })
      expect(r.status, image).toBe(200)
    }
  })

  it("queues a partially valid prompt (200 with node_errors) and runs only the valid outputs", async () => {
    const fake = await useFake()
    const id = uuid()
    const r = await http(fake).post("/prompt", {
      prompt_id: id,
      prompt: {
        "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: 0 } },
        "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "good" } },
        "3": { class_type: "SaveImage", inputs: { filename_prefix: "bad" } }
      }
    })
    expect(r.status).toBe(200)
    const body = r.json<{ prompt_id: string; node_errors: Rejected["node_errors"] }>()
    expect(body.prompt_id).toBe(id)
    expect(Object.keys(body.node_errors)).toEqual(["3"])
    expect(body.node_errors["3"]!.errors[0]!.type).toBe("required_input_missing")
    await fake.whenFinished(id)
    const entry = (await http(fake).get(`/history/${id}`)).json<Record<string, { prompt: Array<unknown>; outputs: Record<string, unknown> }>>()[id]!
    expect(entry.prompt[4]).toEqual(["2"])
    expect(Object.keys(entry.outputs)).toEqual(["2"])
  })

  it("executes only partial_execution_targets, and answers prompt_no_outputs when none is an output", async () => {
    const fake = await useFake()
    const id = uuid()
    const w = { ...saveImageWorkflow(), "4": { class_type: "PreviewImage", inputs: { images: ["2", 0] } } }
    const r = await http(fake).post("/prompt", { prompt: w, prompt_id: id, partial_execution_targets: ["4"] })
    expect(r.status).toBe(200)
    await fake.whenFinished(id)
    const entry = (await http(fake).get(`/history/${id}`)).json<Record<string, { outputs: Record<string, unknown> }>>()[id]!
    expect(Object.keys(entry.outputs)).toEqual(["4"])
    const none = await http(fake).post("/prompt", { prompt: w, partial_execution_targets: ["1"] })
    expect(none.json<Rejected>().error.type).toBe("prompt_no_outputs")
  })

  it("requires a canonical lowercase UUID prompt_id by default (400 invalid_prompt_id)", async () => {
    const fake = await useFake()
    for (const bad of ["not-a-uuid", uuid().toUpperCase(), 123]) {
      const r = await http(fake).post("/prompt", { prompt: saveImageWorkflow(), prompt_id: bad })
      expect(r.status).toBe(400)
      expect(r.json()).toEqual({
        error: {
          type: "invalid_prompt_id",
          message: "prompt_id must be a valid UUID",
          details: "prompt_id must be a UUID string in canonical lowercase hyphenated form; omit it to let the server generate one",
          extra_info: {}
        },
        node_errors: {}
      })
    }
    const generated = await http(fake).post("/prompt", { prompt: saveImageWorkflow(), prompt_id: null })
    expect(generated.status).toBe(200)
  })

  it("stringifies any prompt_id in legacy mode, as 0.3.45-0.3.64 did", async () => {
    const fake = await useFake({ promptIdMode: "legacy" })
    fake.pauseQueue()
    const r = await http(fake).post("/prompt", { prompt: saveImageWorkflow(), prompt_id: 123 })
    expect(r.json<{ prompt_id: string }>().prompt_id).toBe("123")
  })

  it("answers 500 with aiohttp's text for malformed JSON", async () => {
    const fake = await useFake()
    const r = await http(fake).post("/prompt", "{not json")
    expect(r.status).toBe(500)
    expect(r.text).toBe("500 Internal Server Error\n\nServer got itself in trouble")
  })

  it("logs every submission with id, client id and status", async () => {
    const fake = await useFake()
    fake.pauseQueue()
    const id = uuid()
    await http(fake).post("/prompt", { prompt: saveImageWorkflow(), prompt_id: id, client_id: "me" })
    await http(fake).post("/prompt", { client_id: "me" })
    expect(fake.submissions.map((s) => [s.prompt_id, s.client_id, s.status, s.error_type])).toEqual([
      [id, "me", 200, null],
      [null, "me", 400, "no_prompt"]
    ])
    expect(fake.submissions[0]!.at).toBeGreaterThan(0)
  })

  it("removes sensitive extra_data keys from the queued item", async () => {
    const fake = await useFake()
    fake.pauseQueue()
    await http(fake).post("/prompt", { prompt: saveImageWorkflow(), client_id: "c", extra_data: { api_key_comfy_org: "secret", keep: 1 } })
    const q = (await http(fake).get("/queue")).json<{ queue_pending: Array<[number, string, unknown, Record<string, unknown>]> }>()
    const extra = q.queue_pending[0]![3]
    expect(extra).toMatchObject({ keep: 1, client_id: "c" })
    expect(extra).not.toHaveProperty("api_key_comfy_org")
  })
})
