/**
 * The names inside an outputs archive and of the archive itself: unique, safe to unpack, and the
 * runner's own layout.
 */
import { describe, expect, it } from "vitest"
import { WorkflowId } from "@wes/core"
import { archiveName, archivePaths } from "../src/OutputArchive.js"

const output = (subfolder: string, filename: string) => ({ subfolder, filename })

describe("outputs archive names", () => {
  it("keeps <subfolder>/<filename>, numbers a repeated name (case-insensitively) and drops path tricks", () => {
    expect(archivePaths([
      output("run", "a_00001_.png"),
      output("", "ComfyUI_temp_00001_.png"),
      output("run", "A_00001_.PNG"),
      output("run", "a_00001_.png"),
      output("../..//etc/./", "passwd"),
      output("x", ".."),
      output("", "noext"),
      output("", "noext")
    ])).toEqual([
      "run/a_00001_.png",
      "ComfyUI_temp_00001_.png",
      "run/A_00001_ (2).PNG",
      "run/a_00001_ (3).png",
      "etc/passwd",
      "x/file",
      "noext",
      "noext (2)"
    ])
  })

  it("names the archive after the workflow, its id when the name leaves nothing usable", () => {
    const id = WorkflowId.make("01a1fdb6-9607-704a-baeb-2ee49d3e7f64")
    expect(archiveName({ id, name: "Portraits: v2/final" })).toBe("Portraits_ v2_final-outputs.zip")
    expect(archiveName({ id, name: "写真" })).toBe("写真-outputs.zip")
    expect(archiveName({ id, name: "../" })).toBe(`${id}-outputs.zip`)
  })
})
