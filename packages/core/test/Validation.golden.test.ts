/// <reference types="node" />
/**
 * The 400 wording of the core's request decoding (what an embedder calling the use cases reads in
 * a `ValidationError`), compared with golden/validation.json: each request schema and input beside
 * the message and details it produced. `WES_UPDATE_GOLDEN=1` rewrites the file from the running
 * code (never under CI): review the diff before committing it.
 */
import { CreateManagedRunnerRequest, CreateRunnerRequest, CreateUserRequest, IssueTokenRequest, UpdateManagedRunnerRequest, UpdateRunnerRequest, UpdateUserRequest, type ValidationError } from "@wes/core"
import { CreateTemplateRequest, UpdateTemplateRequest } from "../src/domain/Template.js"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as fs from "node:fs"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { decodeRequest } from "../src/domain/Validation.js"

/** Each request schema's decoder, by name (the name the golden file records). */
const DECODERS: Readonly<Record<string, (input: unknown) => Effect.Effect<unknown, ValidationError>>> = {
  CreateManagedRunnerRequest: decodeRequest(CreateManagedRunnerRequest),
  CreateRunnerRequest: decodeRequest(CreateRunnerRequest),
  CreateTemplateRequest: decodeRequest(CreateTemplateRequest),
  CreateUserRequest: decodeRequest(CreateUserRequest),
  IssueTokenRequest: decodeRequest(IssueTokenRequest),
  UpdateManagedRunnerRequest: decodeRequest(UpdateManagedRunnerRequest),
  UpdateRunnerRequest: decodeRequest(UpdateRunnerRequest),
  UpdateTemplateRequest: decodeRequest(UpdateTemplateRequest),
  UpdateUserRequest: decodeRequest(UpdateUserRequest)
}

const many = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`extra_${i}`, i]))

/** The inputs the golden is written from: each wording the contract uses, on the schemas that use it. */
const INPUTS: ReadonlyArray<readonly [string, unknown]> = [
  ["CreateRunnerRequest", {}],
  ["CreateRunnerRequest", null],
  ["CreateRunnerRequest", "runner"],
  ["CreateRunnerRequest", []],
  ["CreateRunnerRequest", { name: 12345, endpoint: "http://r.example", headers: 7, tags: "gpu" }],
  ["CreateRunnerRequest", { name: "", endpoint: "ftp://user:pw@r.example/?q#f" }],
  ["CreateRunnerRequest", { name: "x".repeat(101), endpoint: `http://r.example/${"x".repeat(2048)}` }],
  ["CreateRunnerRequest", { name: "r", endpoint: "http://r.example", headers: { a: 1, "bad name": "v" }, tags: [1, "", "x".repeat(51), "ok"] }],
  ["CreateRunnerRequest", { name: "r", endpoint: "http://r.example", headers: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`h${i}`, "v"])) }],
  ["CreateRunnerRequest", { name: "r", endpoint: "http://r.example", tags: Array.from({ length: 21 }, (_, i) => `t${i}`) }],
  ["CreateRunnerRequest", { name: "r", endpoint: "http://r.example", surplus: true }],
  ["CreateRunnerRequest", { ...many, name: null }],
  ["UpdateRunnerRequest", { status: "paused", name: null, tags: null, headers: [] }],
  ["CreateManagedRunnerRequest", { name: "m", runner_type: "gpu-xl", endpoint: "http://m.example", status: "on" }],
  ["UpdateManagedRunnerRequest", { runner_type: 3, endpoint: 3 }],
  ["CreateUserRequest", { tier: "gold" }],
  ["CreateUserRequest", { tier: "free", email: 5 }],
  ["CreateUserRequest", { tier: "free", email: "not an address" }],
  ["CreateUserRequest", { tier: "free", email: `${"x".repeat(320)}@e.example` }],
  ["UpdateUserRequest", { tier: null }],
  ["IssueTokenRequest", { name: "", expires_at: "nope" }],
  ["IssueTokenRequest", { name: "t", expires_at: 1_700_000_000 }],
  ["IssueTokenRequest", { expires_at: "2026-13-45T99:00:00Z" }],
  ["CreateTemplateRequest", { name: "t", description: 5, body: [] }],
  ["CreateTemplateRequest", { name: "t", description: "d", body: "{}" }],
  ["UpdateTemplateRequest", { body: null, name: 1 }]
]

interface Golden {
  readonly schema: string
  readonly input: unknown
  readonly error: { readonly message: string; readonly details: unknown } | "accepted"
}

const FILE = fileURLToPath(new URL("golden/validation.json", import.meta.url))

const decode = (schema: string, input: unknown): Golden["error"] => {
  const decoder = DECODERS[schema]
  if (decoder === undefined) throw new Error(`no request schema ${schema}`)
  return Result.match(Effect.runSync(Effect.result(decoder(input))), {
    onFailure: (e) => ({ message: e.message, details: e.details }),
    onSuccess: () => "accepted" as const
  })
}

describe("the core's 400 wording", () => {
  it("says what golden/validation.json says, input by input", () => {
    if (process.env["WES_UPDATE_GOLDEN"] === "1") {
      if (!["", "0", "false"].includes(process.env["CI"] ?? "")) throw new Error("WES_UPDATE_GOLDEN is refused under CI: the goldens are written on purpose, and reviewed")
      const golden: ReadonlyArray<Golden> = INPUTS.map(([schema, input]) => ({ schema, input, error: decode(schema, input) }))
      fs.writeFileSync(FILE, `${JSON.stringify(golden, null, 2)}\n`)
      return console.log(`golden: wrote ${FILE}`)
    }
    const golden = JSON.parse(fs.readFileSync(FILE, "utf8")) as ReadonlyArray<Golden>
    expect(golden.length).toBeGreaterThan(20)
    for (const [i, { schema, input, error }] of golden.entries()) {
      // A readable diff of what moved, and the bytes an HTTP answer would carry (key order counts too).
      const decoded = decode(schema, input)
      expect.soft({ error: decoded, bytes: JSON.stringify(decoded) }, `#${i} ${schema} ${JSON.stringify(input).slice(0, 100)}`)
        .toEqual({ error, bytes: JSON.stringify(error) })
    }
  })
})
