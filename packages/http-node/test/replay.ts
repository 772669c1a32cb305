/**
 * Requests written down as data, so that a golden file can say which request produced each answer
 * and send it again: a long run of the same characters is kept as `{ repeat, times }`. They are
 * sent with plain fetch and sockets, so the same bytes go out whatever version of Effect answers.
 */
import * as net from "node:net"
import { ADMIN_TOKEN, type TestServer } from "./harness.js"

/** Text as segments: `["{\"a\":", { repeat: "[", times: 8000 }, ...]`, or a plain string. */
export type Text = string | ReadonlyArray<string | { readonly repeat: string; readonly times: number }>

export type FormPart =
  | { readonly name: string; readonly value: Text }
  | { readonly name: string; readonly filename: string; readonly type: string; readonly content: Text }

/** Who the request is from: the fixture user's token, the operator token, or nobody. */
export type Auth = "user" | "admin" | "none"

export type Request =
  | {
    readonly method: string
    /** `{user}`, `{runner}` and `{template}` stand for the fixtures' ids. */
    readonly path: Text
    readonly auth: Auth
    readonly headers?: Readonly<Record<string, Text>>
    readonly body?: { readonly text: Text } | { readonly form: ReadonlyArray<FormPart> }
  }
  | { readonly raw: Text }

export interface Answer {
  readonly status: number
  readonly contentType: string | null
  readonly body: string
}

export interface Fixtures {
  readonly url: string
  readonly tokens: Readonly<Record<Exclude<Auth, "none">, string>>
  readonly ids: Readonly<Record<"user" | "runner" | "template", string>>
}

export const expand = (text: Text): string =>
  typeof text === "string" ? text : text.map((s) => (typeof s === "string" ? s : s.repeat.repeat(s.times))).join("")

/** Runs of 64 characters or more of a unit of up to 8 are kept as `{ repeat, times }`. */
export const compact = (text: string): Text => {
  const out: Array<string | { repeat: string; times: number }> = []
  let plain = ""
  let i = 0
  while (i < text.length) {
    let best = { unit: "", times: 0 }
    for (let p = 1; p <= 8 && i + p <= text.length; p++) {
      const unit = text.slice(i, i + p)
      let times = 1
      while (text.startsWith(unit, i + times * p)) times++
      if (times * p >= 64 && times * p > best.times * best.unit.length) best = { unit, times }
    }
    if (best.times === 0) {
      plain += text[i]
      i++
    } else {
      if (plain !== "") out.push(plain)
      plain = ""
      out.push({ repeat: best.unit, times: best.times })
      i += best.unit.length * best.times
    }
  }
  if (out.length === 0) return plain
  if (plain !== "") out.push(plain)
  return out
}

/** The method and path, shortened: each run is shown as `x{20000}`. */
export const describe = (request: Request): string => {
  const short = (t: Text) => (typeof t === "string" ? t : t.map((s) => (typeof s === "string" ? s : `${s.repeat}{${s.times}}`)).join(""))
  if ("raw" in request) return `raw ${JSON.stringify(short(request.raw).slice(0, 120))}`
  return `${request.method} ${short(request.path).slice(0, 120)}`
}

const withIds = (path: string, fixtures: Fixtures) => path.replace(/\{(user|runner|template)\}/g, (_, name: keyof Fixtures["ids"]) => fixtures.ids[name])

/** Sends bytes on a fresh connection and reads the answer's status line, content type and body. */
const sendRaw = (fixtures: Fixtures, bytes: string) =>
  new Promise<Answer>((resolve, reject) => {
    const url = new URL(fixtures.url)
    const socket = net.connect(Number(url.port), url.hostname)
    const chunks: Array<Buffer> = []
    socket.on("data", (d: Buffer) => chunks.push(d))
    socket.on("error", reject)
    socket.on("close", () => {
      const answer = Buffer.concat(chunks).toString()
      const head = answer.slice(0, answer.indexOf("\r\n\r\n"))
      const type = /^content-type: *(.*)$/im.exec(head)
      resolve({ status: Number(head.split(" ")[1]), contentType: type?.[1] ?? null, body: answer.slice(head.length + 4) })
    })
    socket.end(bytes)
  })

export const send = async (fixtures: Fixtures, request: Request): Promise<Answer> => {
  if ("raw" in request) return sendRaw(fixtures, expand(request.raw))
  const headers: Record<string, string> = {}
  if (request.auth !== "none") headers.authorization = `Bearer ${fixtures.tokens[request.auth]}`
  for (const [name, value] of Object.entries(request.headers ?? {})) headers[name] = expand(value)
  let body: string | FormData | undefined
  if (request.body !== undefined && "text" in request.body) body = expand(request.body.text)
  else if (request.body !== undefined) {
    const form = new FormData()
    for (const part of request.body.form) {
      if ("value" in part) form.append(part.name, expand(part.value))
      else form.append(part.name, new Blob([expand(part.content)], { type: part.type }), part.filename)
    }
    body = form
  }
  const res = await fetch(fixtures.url + withIds(expand(request.path), fixtures), {
    method: request.method,
    headers,
    ...(body === undefined ? {} : { body })
  })
  return { status: res.status, contentType: res.headers.get("content-type"), body: await res.text() }
}

/** The ids and tokens the goldens' requests refer to: a plus-tier user with one runner and one template, and the operator. */
export const makeFixtures = async (server: TestServer): Promise<Fixtures> => {
  const user = await server.user("plus")
  const created = async (path: string, init: RequestInit) => {
    const res = await server.fetch(path, { method: "POST", headers: user.auth, ...init })
    if (res.status !== 201) throw new Error(`fixture ${path}: ${res.status} ${await res.text()}`)
    return ((await res.json()) as { readonly id: string }).id
  }
  const runner = await created("/v1/runner", {
    headers: { ...user.auth, "content-type": "application/json" },
    body: JSON.stringify({ name: "fixture", endpoint: "http://runner.example:8188" })
  })
  const form = new FormData()
  form.append("name", "fixture")
  form.append("description", "d")
  form.append("body", new Blob([JSON.stringify({ "1": { class_type: "SaveImage", inputs: {} } })], { type: "application/json" }), "body.json")
  const template = await created("/v1/template", { body: form })
  return { url: server.url, tokens: { user: user.token, admin: ADMIN_TOKEN }, ids: { user: user.id, runner, template } }
}
