/**
 * A team's own workflow (workflows/thumbnail.json: a photo -> a thumbnail and its negative) tested
 * end to end: created through WES, dispatched to a ComfyUI (the fake), completed, and its output
 * files downloaded and checked. Each test boots the whole stack and prints how long it took.
 */
import { NoEligibleRunner, ValidationError, type WesWorkflow } from "@wes/core"
import { inspectImage, solidPng } from "@wes/runner-client/testing"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { type Harness, startHarness, workflowFile } from "../harness.js"

let h: Harness
let started = 0
beforeEach(async () => {
  started = performance.now()
  h = await startHarness()
})
afterEach(async () => {
  await h.close()
  console.info(`[in-memory-harness] ${expect.getState().currentTestName}: ${(performance.now() - started).toFixed(0)} ms (boot included)`)
})

const photo = (width: number, height: number, color: number) => ({ filename: "photo.png", content_type: "image/png", data: solidPng(width, height, color) })

/** Creates the thumbnail workflow and waits for it to finish. */
const runThumbnail = async (params: Record<string, string | number | ReturnType<typeof photo>>): Promise<WesWorkflow> => {
  const created = await h.wes.createWorkflow(h.user, { name: "thumbnail", workflow_json: await workflowFile("thumbnail.json"), params })
  return h.wes.waitForWorkflow(h.user, created.id)
}

/** Every output file of a workflow, downloaded, by file name. */
const downloads = async (workflow: WesWorkflow) => {
  const files = new Map<string, { readonly subfolder: string; readonly bytes: Buffer }>()
  for (const output of await h.wes.outputs(h.user, workflow.id)) {
    const file = await h.wes.downloadOutput(h.user, workflow.id, output.id)
    expect(file.content_type).toBe("image/png")
    files.set(output.filename, { subfolder: output.subfolder, bytes: Buffer.from(file.bytes) })
  }
  return files
}

describe("workflows/thumbnail.json", () => {
  it("turns a photo into a thumbnail and its negative", async () => {
    const workflow = await runThumbnail({ $photo: photo(800, 600, 0x336699), $width: 200, "#method": "lanczos" })
    expect(workflow).toMatchObject({ status: "completed", exception_message: null })
    expect(workflow.workflow_params).toEqual(expect.arrayContaining([["$text(width)", "200"], ["#choice(method)", "lanczos"]]))

    const files = await downloads(workflow)
    expect([...files.keys()].sort()).toEqual(["negative_00001_.png", "thumb_00001_.png"])
    const thumb = files.get("thumb_00001_.png")!
    expect(thumb.subfolder).toBe("thumbnails")
    expect(inspectImage(thumb.bytes)).toMatchObject({ format: "PNG", width: 200, height: 150, color: 0x336699 })
    expect(inspectImage(files.get("negative_00001_.png")!.bytes)).toMatchObject({ width: 200, height: 150, color: 0xcc9966 })

    // What ComfyUI received: the uploaded photo wired into LoadImage, the parameters substituted
    // with the types the runner declares for their inputs (INT width as a number).
    const prompt = (h.comfyui.submissions.at(-1)!.body as { prompt: Record<string, { inputs: Record<string, unknown> }> }).prompt
    expect(prompt["1"]!.inputs["image"]).toMatch(/^wes\/.*photo\.png$/)
    expect(prompt["2"]!.inputs).toMatchObject({ width: 200, upscale_method: "lanczos", height: 0 })
  })

  it("uses the parameters' defaults and streams progress until done", async () => {
    const created = await h.wes.createWorkflow(h.user, {
      name: "thumbnail",
      workflow_json: await workflowFile("thumbnail.json"),
      params: { $photo: photo(512, 512, 0xffffff) }
    })
    const events: Array<string> = []
    for await (const event of h.wes.follow(h.user, created.id)) events.push(event.type)
    expect(events[0]).toBe("status")
    expect(events.at(-1)).toBe("done")
    expect(events.filter((e) => e === "output")).toHaveLength(2)

    const workflow = await h.wes.getWorkflow(h.user, created.id)
    expect(workflow.workflow_params).toEqual(expect.arrayContaining([["$text(width)", "256"], ["#choice(method)", "bilinear"]]))
    const files = await downloads(workflow)
    expect(inspectImage(files.get("thumb_00001_.png")!.bytes)).toMatchObject({ width: 256, height: 256 })
  })

  it("rejects calls the workflow cannot take, before anything reaches ComfyUI", async () => {
    const noPhoto = await h.wes.createWorkflow(h.user, { name: "t", workflow_json: await workflowFile("thumbnail.json") }).catch((e: unknown) => e)
    expect(noPhoto).toBeInstanceOf(ValidationError)
    expect(noPhoto).toMatchObject({ details: [expect.objectContaining({ field: "$photo" })] })

    const badMethod = await h.wes.createWorkflow(h.user, {
      name: "t",
      workflow_json: await workflowFile("thumbnail.json"),
      params: { $photo: photo(64, 64, 0), "#method": "sharpen" }
    }).catch((e: unknown) => e)
    expect(badMethod).toMatchObject({ _tag: "ValidationError", details: [expect.objectContaining({ field: "#method" })] })

    const wrongTags = await h.wes.createWorkflow(h.user, {
      name: "t",
      workflow_json: await workflowFile("thumbnail.json"),
      tags: ["h100"],
      params: { $photo: photo(64, 64, 0) }
    }).catch((e: unknown) => e)
    expect(wrongTags).toBeInstanceOf(NoEligibleRunner)
    expect(h.comfyui.submissions).toEqual([])
  })

  it("reports a node that fails on the runner", async () => {
    h.comfyui.failNode({ classType: "ImageScale", exceptionType: "torch.OutOfMemoryError", exceptionMessage: "CUDA out of memory" })
    const workflow = await runThumbnail({ $photo: photo(64, 64, 0) })
    expect(workflow).toMatchObject({
      status: "failed",
      error_node: "2",
      exception_type: "torch.OutOfMemoryError",
      exception_message: expect.stringContaining("CUDA out of memory")
    })
    expect(await h.wes.outputs(h.user, workflow.id)).toEqual([])
  })

  it("cancels a run that is in progress", async () => {
    h.comfyui.hold()
    const created = await h.wes.createWorkflow(h.user, {
      name: "t",
      workflow_json: await workflowFile("thumbnail.json"),
      params: { $photo: photo(64, 64, 0) }
    })
    for await (const event of h.wes.follow(h.user, created.id)) {
      if ((event.data as { status?: string }).status === "running") break
    }
    expect((await h.wes.cancelWorkflow(h.user, created.id)).status).toBe("cancelled")
    h.comfyui.release()
    await h.comfyui.whenFinished(created.id)
    expect(await h.wes.getWorkflow(h.user, created.id)).toMatchObject({ status: "cancelled" })
    expect(await h.comfyui.files.list("output")).toEqual([])
  })
})
