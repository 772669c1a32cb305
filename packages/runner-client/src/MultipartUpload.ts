/**
 * A streamed multipart/form-data body: text fields, then one file part whose bytes are piped
 * from a stream, so an upload is never held in memory whole.
 */
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import * as Stream from "effect/Stream"

const encoder = new TextEncoder()

/** Quotes a header parameter value the way browsers do (`"` and line breaks percent-encoded). */
const quoted = (s: string): string => `"${s.replace(/"/g, "%22").replace(/\r/g, "%0D").replace(/\n/g, "%0A")}"`

/** A fresh boundary that cannot be confused with ordinary content. */
const boundary: Effect.Effect<string> = Effect.map(
  Effect.all(Array.from({ length: 4 }, () => Random.nextIntBetween(0, 0x7fffffff))),
  (parts) => `----wes-${parts.map((n) => n.toString(36)).join("")}`
)

/** The body and Content-Type of a form with `fields` and one streamed `file`. */
export const multipartUpload = <E>(form: {
  readonly fields: Readonly<Record<string, string>>
  readonly file: {
    readonly field: string
    readonly filename: string
    readonly contentType: string
    readonly content: Stream.Stream<Uint8Array, E>
  }
}): Effect.Effect<{ readonly body: Stream.Stream<Uint8Array, E>; readonly contentType: string }> =>
  Effect.map(boundary, (b) => {
    const fields = Object.entries(form.fields)
      .map(([name, value]) => `--${b}\r\nContent-Disposition: form-data; name=${quoted(name)}\r\n\r\n${value}\r\n`)
      .join("")
    const fileType = form.file.contentType.replace(/[\r\n]/g, "") || "application/octet-stream"
    const head = `${fields}--${b}\r\nContent-Disposition: form-data; name=${quoted(form.file.field)}; filename=${quoted(form.file.filename)}\r\nContent-Type: ${fileType}\r\n\r\n`
    return {
      contentType: `multipart/form-data; boundary=${b}`,
      body: Stream.make(encoder.encode(head)).pipe(
        Stream.concat(form.file.content),
        Stream.concat(Stream.make(encoder.encode(`\r\n--${b}--\r\n`)))
      )
    }
  })
