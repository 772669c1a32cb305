/**
 * The requests whose 4xx answers golden/errors.json records: every decoding case (derived from the
 * declaration, decoding-cases.ts) and the requests of input.test.ts and json-bounds.test.ts, with
 * one fixed instance of each document shape json-bounds' property run draws. Used only to write
 * the goldens (WES_UPDATE_GOLDEN=1); comparing replays the requests the golden file holds.
 */
import { requestOf, routes } from "./decoding-cases.js"
import { smokeWorkflow } from "./harness.js"
import { compact, type FormPart, type Request } from "./replay.js"

export interface GoldenCase {
  /** The test (and the behaviour) the request comes from. */
  readonly from: string
  readonly request: Request
}

const file = (name: string, content: string, type = "application/json", filename = "f.json"): FormPart =>
  ({ name, filename, type, content: compact(content) })
const field = (name: string, value: string): FormPart => ({ name, value: compact(value) })
const post = (path: string, auth: "user" | "admin", form: ReadonlyArray<FormPart>): Request => ({ method: "POST", path, auth, body: { form } })
const postJson = (path: string, auth: "user" | "admin", text: string, method = "POST"): Request =>
  ({ method, path, auth, headers: { "content-type": "application/json" }, body: { text: compact(text) } })

/** The smoke workflow with its `color` input nested `depth` arrays deep. */
const deepWorkflow = (depth: number) => JSON.stringify(smokeWorkflow()).replace("\"color\":255", `"color":${"[".repeat(depth)}${"]".repeat(depth)}`)

const decoding = (): ReadonlyArray<GoldenCase> =>
  routes.flatMap((route) => route.cases.map((c) => ({ from: `decoding.test.ts: ${c.where} field ${c.field}`, request: requestOf(route, c) })))

const input = (): ReadonlyArray<GoldenCase> => {
  const from = "input.test.ts"
  const unreadable = "--=?=\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nx\r\n--=?=--\r\n"
  const boundaries = ["multipart/form-data; boundary==?=", "multipart/form-data; boundary=x;", "multipart/form-data; boundary=a b", "multipart/form-data; boundary=\"=?=\""]
  return [
    ...boundaries.flatMap((contentType) => ["/v1/template", "/v1/workflow"].map((path) => ({
      from: `${from}: a multipart boundary the parser cannot read (or, quoted, can)`,
      request: { method: "POST", path, auth: "user" as const, headers: { "content-type": contentType }, body: { text: unreadable } }
    }))),
    { from: `${from}: a request head over 16 KB`, request: { method: "GET", path: compact(`/v1/user?q=${"x".repeat(20_000)}`), auth: "user" } },
    {
      from: `${from}: a form whose parts go to disk part-way`,
      request: {
        method: "PUT",
        path: "/v1/template/{template}",
        auth: "user",
        body: {
          form: [
            file("$../x", "é".repeat(186_500), "image/png", "/etc/passwd"),
            file("file", "🙂".repeat(182_150), "application/json", ".."),
            file("$image", "x".repeat(51_200), "text/plain", "i.png"),
            file("$color", "", "application/json", "..%2F..%2Fetc"),
            field("tags", "gpu")
          ]
        }
      }
    },
    { from: `${from}: a request the HTTP parser refuses`, request: { raw: "GET /v1/user HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n" } }
  ]
}

const jsonBounds = (): ReadonlyArray<GoldenCase> => {
  const from = "json-bounds.test.ts"
  const deep = (n: number) => "[".repeat(n) + "]".repeat(n)
  // One of each shape the property run draws: deep arrays, a wide object, deep objects, a plain JSON value.
  const shapes = [deep(300_000), `{${Array.from({ length: 100 }, (_, i) => `"k${i}":${i}`).join(",")}}`, "{\"a\":".repeat(20_000) + "1" + "}".repeat(20_000), "[1,\"a\",{\"b\":null}]"]
  const jsonRoutes: ReadonlyArray<readonly [string, string, "user" | "admin"]> = [
    ["POST", "/v1/runner", "user"],
    ["PATCH", "/v1/runner/{runner}", "user"],
    ["POST", "/admin/v1/users", "admin"],
    ["PATCH", "/admin/v1/users/{user}", "admin"],
    ["POST", "/admin/v1/users/{user}/tokens", "admin"],
    ["POST", "/admin/v1/managed-runners", "admin"]
  ]
  const formRoutes: ReadonlyArray<readonly [string, string, ReadonlyArray<FormPart>]> = [
    ["POST", "/v1/workflow", [field("name", "w")]],
    ["POST", "/v1/template", [field("name", "t"), field("description", "d")]],
    ["PUT", "/v1/template/{template}", []]
  ]
  const workflow = (text: string, ...more: ReadonlyArray<FormPart>) => post("/v1/workflow", "user", [file("workflow_json", text), field("name", "deep"), ...more])
  const form = (name: string, json: unknown, ...fields: ReadonlyArray<FormPart>) =>
    post("/v1/workflow", "user", [file("workflow_json", JSON.stringify(json), "application/json", "workflow.json"), field("name", name), ...fields])
  return [
    ...[8_000, 200_000, 65].map((depth) => ({ from: `${from}: workflow_json nested too deep`, request: workflow(deepWorkflow(depth)) })),
    { from: `${from}: workflow_json over 5 MB`, request: workflow(JSON.stringify(smokeWorkflow({ note: "x".repeat(5 * 1024 * 1024) }))) },
    { from: `${from}: a template body nested too deep`, request: post("/v1/template", "user", [file("body", deepWorkflow(10_000)), field("name", "t"), field("description", "d")]) },
    ...[["/v1/runner", "user"], ["/admin/v1/users", "admin"]].map(([path, auth]) => ({
      from: `${from}: a JSON request body nested too deep`,
      request: postJson(path!, auth as "user" | "admin", `{"name":${deep(100_000)}}`)
    })),
    ...shapes.flatMap((text) => [
      ...jsonRoutes.map(([method, path, auth]) => ({ from: `${from}: deep and wide documents`, request: postJson(path, auth, text, method) })),
      ...formRoutes.map(([method, path, fields]) => ({
        from: `${from}: deep and wide documents`,
        request: { method, path, auth: "user" as const, body: { form: [file(path.startsWith("/v1/workflow") ? "workflow_json" : "body", text), ...fields] } }
      }))
    ]),
    ...["$txt(color)", "#text(color)", "$choice(color, a, b)"].map((typo) => ({
      from: `${from}: a placeholder of no known kind`,
      request: form("typo", smokeWorkflow({ color: typo }))
    })),
    { from: `${from}: the contract's words`, request: postJson("/v1/runner", "user", JSON.stringify({ name: 12345, endpoint: "http://r.example", headers: 7, tags: "gpu" })) },
    { from: `${from}: the contract's words`, request: postJson("/admin/v1/users", "admin", JSON.stringify({ tier: "free", email: 5 })) },
    { from: `${from}: the contract's words`, request: postJson("/admin/v1/users/{user}/tokens", "admin", JSON.stringify({ name: "t", expires_at: "nope" })) },
    { from: `${from}: an over-long tag`, request: form("t", smokeWorkflow(), field("tags", "x".repeat(5_000))) }
  ]
}

export const goldenCases = (): ReadonlyArray<GoldenCase> => [...decoding(), ...input(), ...jsonBounds()]
