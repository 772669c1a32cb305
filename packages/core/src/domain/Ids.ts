/** Identifiers: UUID strings, generated as time-ordered UUID v7 through the IdGenerator service. */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { Crypto } from "./Crypto.js"

const UUID_PATTERN = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/

/** A UUID string of any version (the form only, as `isUuid` checks it). */
const Uuid = Schema.String.check(Schema.isPattern(UUID_PATTERN, {
  expected: "a UUID",
  description: "a Universally Unique Identifier",
  toJsonSchema: () => ({ format: "uuid", pattern: UUID_PATTERN.source })
}))

export const UserId = Uuid.pipe(Schema.brand("UserId"))
export type UserId = typeof UserId.Type
export const WorkflowId = Uuid.pipe(Schema.brand("WorkflowId"))
export type WorkflowId = typeof WorkflowId.Type
export const TemplateId = Uuid.pipe(Schema.brand("TemplateId"))
export type TemplateId = typeof TemplateId.Type
export const RunnerId = Uuid.pipe(Schema.brand("RunnerId"))
export type RunnerId = typeof RunnerId.Type
export const ManagedRunnerId = Uuid.pipe(Schema.brand("ManagedRunnerId"))
export type ManagedRunnerId = typeof ManagedRunnerId.Type
export const TokenId = Uuid.pipe(Schema.brand("TokenId"))
export type TokenId = typeof TokenId.Type
export const RunnerTokenId = Uuid.pipe(Schema.brand("RunnerTokenId"))
export type RunnerTokenId = typeof RunnerTokenId.Type
export const OutputId = Uuid.pipe(Schema.brand("OutputId"))
export type OutputId = typeof OutputId.Type

/** True when `s` is a UUID string (any version). */
export const isUuid = (s: string): boolean => UUID_PATTERN.test(s)

/** Produces new identifiers. */
export class IdGenerator extends Context.Service<IdGenerator, {
  /** A new lowercase UUID string; v7 (time-ordered) in the live layer. */
  readonly next: Effect.Effect<string>
}>()("@wes/core/IdGenerator") {}

const hex = (bytes: Uint8Array): string => {
  let s = ""
  for (const b of bytes) s += b.toString(16).padStart(2, "0")
  return s
}

/** Formats 16 bytes as a canonical UUID string. */
export const formatUuid = (bytes: Uint8Array): string => {
  const h = hex(bytes)
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
}

/**
 * Builds a UUID v7 (RFC 9562): 48-bit Unix milliseconds, then a 12-bit counter that keeps ids
 * created in the same millisecond in order, then 62 random bits.
 */
export const uuidV7 = (millis: number, counter: number, random: Uint8Array): string => {
  const b = new Uint8Array(16)
  const ms = Math.max(0, Math.floor(millis))
  const hi = Math.floor(ms / 2 ** 16)
  b[0] = (hi >>> 24) & 0xff
  b[1] = (hi >>> 16) & 0xff
  b[2] = (hi >>> 8) & 0xff
  b[3] = hi & 0xff
  b[4] = (ms >>> 8) & 0xff
  b[5] = ms & 0xff
  b[6] = 0x70 | ((counter >>> 8) & 0x0f)
  b[7] = counter & 0xff
  b[8] = 0x80 | ((random[0] ?? 0) & 0x3f)
  for (let i = 9; i < 16; i++) b[i] = random[i - 8] ?? 0
  return formatUuid(b)
}

/** UUID v7 ids from the Clock and the Crypto service; monotonic within one generator. */
export const IdGeneratorLive: Layer.Layer<IdGenerator, never, Crypto> = Layer.effect(
  IdGenerator,
  Effect.gen(function*() {
    const crypto = yield* Crypto
    let lastMs = 0
    let counter = 0
    return IdGenerator.of({
      next: Effect.gen(function*() {
        const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
        const random = yield* crypto.randomBytes(10)
        // Same or earlier millisecond (clock step back): stay on lastMs and count up.
        if (now <= lastMs) {
          counter++
          if (counter > 0xfff) {
            lastMs++
            counter = 0
          }
        } else {
          lastMs = now
          counter = ((random[9] ?? 0) & 0x7f) // random start leaves room to count up
        }
        return uuidV7(lastMs, counter, random)
      })
    })
  })
)
