/**
 * The contract does not move: the server's OpenAPI document and its 4xx bodies are compared byte
 * for byte with the goldens in test/golden/, recorded from the running code. errors.json holds
 * each request (method, path, headers, body) beside the answer it got, and is replayed request by
 * request. `WES_UPDATE_GOLDEN=1` rewrites both files from the running code (never under CI):
 * review the diff before committing it. The OpenAPI document is compared through the accepted
 * differences of openapi-differences.ts: what Effect 4 writes differently, each rule named.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startServer, type TestServer } from "./harness.js"
import { acceptedDifferences, type Json } from "./openapi-differences.js"
import { type Answer, describe as describeRequest, type Fixtures, makeFixtures, type Request, send } from "./replay.js"

const UPDATE = process.env["WES_UPDATE_GOLDEN"] === "1"
const DIR = fileURLToPath(new URL("golden", import.meta.url))
const OPENAPI = path.join(DIR, "openapi.json")
const ERRORS = path.join(DIR, "errors.json")

interface Recorded {
  readonly status: number
  readonly content_type: string | null
  /** The body as JSON, when it is JSON as `JSON.stringify` writes it; otherwise `body_text`. */
  readonly body?: unknown
  readonly body_text?: string
}

interface GoldenError {
  readonly from: string
  readonly request: Request
  readonly response: Recorded
}

/** Parsed, if `text` is exactly what JSON.stringify writes for it (so the bytes can be written back). */
const canonical = (text: string): { readonly json: unknown } | undefined => {
  try {
    const json: unknown = JSON.parse(text)
    return JSON.stringify(json) === text ? { json } : undefined
  } catch {
    return undefined
  }
}

const record = (answer: Answer): Recorded => {
  const parsed = canonical(answer.body)
  return { status: answer.status, content_type: answer.contentType, ...(parsed === undefined ? { body_text: answer.body } : { body: parsed.json }) }
}

/** What a comparison shows: the body as JSON (a readable diff) and as bytes (formatting and key order too). */
const comparable = (r: Recorded) => {
  const bytes = r.body_text ?? JSON.stringify(r.body)
  return { status: r.status, content_type: r.content_type, body: canonical(bytes)?.json ?? bytes, bytes }
}

const write = (file: string, value: unknown) => {
  if (!["", "0", "false"].includes(process.env["CI"] ?? "")) throw new Error("WES_UPDATE_GOLDEN is refused under CI: the goldens are written on purpose, and reviewed")
  fs.writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`)
  console.log(`golden: wrote ${path.relative(process.cwd(), file)}`)
}

describe("the contract's goldens", () => {
  let server: TestServer
  let fixtures: Fixtures
  beforeAll(async () => {
    server = await startServer()
    fixtures = await makeFixtures(server)
  })
  afterAll(async () => { await server.close() })

  it("serves /v1/openapi.json as golden/openapi.json, byte for byte", async () => {
    const res = await server.fetch("/v1/openapi.json")
    expect(res.status).toBe(200)
    const served = await res.text()
    if (UPDATE) {
      const parsed = canonical(served)
      if (parsed === undefined) throw new Error("the OpenAPI document is not JSON as JSON.stringify writes it: store its bytes instead")
      return write(OPENAPI, parsed.json)
    }
    // The golden document as Effect 4 writes it: each accepted difference must still be one.
    let expected = JSON.parse(fs.readFileSync(OPENAPI, "utf8")) as Json
    const servedDocument = JSON.parse(served) as Json
    for (const difference of acceptedDifferences) {
      const next = difference.apply(expected, servedDocument)
      expect(JSON.stringify(next), `accepted difference "${difference.name}" changes nothing: remove it`).not.toBe(JSON.stringify(expected))
      expected = next
    }
    // A readable line diff of what moved, then the bytes themselves (formatting, escapes, key order).
    expect(`${JSON.stringify(JSON.parse(served), null, 2)}\n`).toBe(`${JSON.stringify(expected, null, 2)}\n`)
    expect(served).toBe(JSON.stringify(expected))
  })

  it("answers each request of golden/errors.json as recorded, byte for byte", async () => {
    if (UPDATE) {
      const { goldenCases } = await import("./golden-cases.js")
      const recorded: Array<GoldenError> = []
      for (const c of goldenCases()) {
        const answer = await send(fixtures, c.request)
        if (answer.status < 400 || answer.status >= 500) throw new Error(`${describeRequest(c.request)} (${c.from}): ${answer.status} is not a 4xx`)
        recorded.push({ ...c, response: record(answer) })
      }
      return write(ERRORS, recorded)
    }
    const golden = JSON.parse(fs.readFileSync(ERRORS, "utf8")) as ReadonlyArray<GoldenError>
    expect(golden.length).toBeGreaterThan(100)
    for (const [i, { from, request, response }] of golden.entries()) {
      const answer = await send(fixtures, request)
      expect.soft(comparable(record(answer)), `#${i} ${describeRequest(request)} (${from})`).toEqual(comparable(response))
    }
  }, 180_000)
})
