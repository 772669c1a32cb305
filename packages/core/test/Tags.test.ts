import { ValidationError } from "@wes/core"
import { normalizeTags, parseTagList, tagsMatch } from "../src/domain/Tags.js"
import * as Result from "effect/Result"
import { describe, expect, it } from "vitest"

const ok = <A>(e: Result.Result<A, ValidationError>): A => Result.getOrThrowWith(e, (err) => err)
const err = <A>(e: Result.Result<A, ValidationError>): ValidationError => Result.getFailure(e).pipe((o) => {
  if (o._tag === "None") throw new Error("expected an error")
  return o.value
})

describe("tags", () => {
  it("parses the comma-separated form field, trimming and lowercasing", () => {
    expect(ok(parseTagList(" GPU , sdxl,fast "))).toEqual(["gpu", "sdxl", "fast"])
  })

  it("treats an absent or blank field as no tags", () => {
    expect(ok(parseTagList(undefined))).toEqual([])
    expect(ok(parseTagList(""))).toEqual([])
    expect(ok(parseTagList("   "))).toEqual([])
  })

  it("rejects an empty entry between commas as a format error naming the field", () => {
    for (const field of ["a,,b", "a,", ",a", "a, ,b"]) {
      const e = err(parseTagList(field))
      expect(e.details[0]!.field).toBe("tags")
      expect(e.message).toContain("must not be empty")
    }
  })

  it("drops duplicates, also those that differ only in case", () => {
    expect(ok(parseTagList("gpu,GPU,Gpu,cpu,gpu"))).toEqual(["gpu", "cpu"])
  })

  it("accepts a tag of 50 characters and rejects 51", () => {
    expect(ok(normalizeTags(["x".repeat(50)]))).toEqual(["x".repeat(50)])
    expect(err(normalizeTags(["x".repeat(51)])).message).toContain("at most 50 characters")
  })

  it("accepts 10 tags and rejects 11", () => {
    const ten = Array.from({ length: 10 }, (_, i) => `t${i}`)
    expect(ok(normalizeTags(ten))).toHaveLength(10)
    const e = err(normalizeTags([...ten, "t10"]))
    expect(e.message).toBe("tags: at most 10 tags are allowed (got 11)")
  })

  it("rejects commas and control characters inside a tag", () => {
    expect(err(normalizeTags(["a,b"])).message).toContain("commas")
    expect(err(normalizeTags(["a\nb"])).message).toContain("control characters")
  })

  it("matches when the runner's tags contain every workflow tag", () => {
    expect(tagsMatch(["gpu", "sdxl", "fast"], ["sdxl", "gpu"])).toBe(true)
    expect(tagsMatch(["gpu"], ["gpu", "sdxl"])).toBe(false)
    expect(tagsMatch([], ["gpu"])).toBe(false)
  })

  it("lets a workflow without tags run anywhere", () => {
    expect(tagsMatch([], [])).toBe(true)
    expect(tagsMatch(["gpu"], [])).toBe(true)
  })
})
