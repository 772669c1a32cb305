/**
 * What the API's multipart forms are made of. WES's multipart reader (MultipartReader.ts) hands
 * each request's form over as a record: text fields as strings, file parts as `FormFile`s, every
 * field at most once. The forms of the declaration (Api.ts) are Schemas over that record, so the
 * OpenAPI document, the decoding of a request and the handlers' types are one description.
 * Platform-neutral: the typed client imports the declaration too.
 */
import {
  type BlobContent,
  depthMessage,
  isParamField,
  JSON_MAX_BYTES,
  JSON_MAX_DEPTH,
  sizeMessage,
  type StorageError,
  type SuppliedParam,
  textNestsDeeperThan,
  type UploadedFile,
  utf8Length
} from "@wes/core"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as SchemaGetter from "effect/SchemaGetter"
import * as SchemaIssue from "effect/SchemaIssue"

/** A file part of a form, held by the reader for the life of the request. */
export class FormFile {
  constructor(
    /** The form field it was sent as. */
    readonly field: string,
    readonly filename: string,
    readonly contentType: string,
    /** Bytes received. */
    readonly size: number,
    /** Its bytes: held in memory, or streamed from the request's temporary file. */
    readonly content: BlobContent,
    /** Its bytes as UTF-8 text. */
    readonly text: Effect.Effect<string, StorageError>
  ) {}

  toString(): string {
    return `FormFile(${this.field}: ${this.filename}, ${this.size} bytes)`
  }
}

/** A form as the reader gives it: field name -> text or file. */
export type FormRecord = Readonly<Record<string, string | FormFile>>

/** How a file part is written in the OpenAPI document: `{type: string, format: binary}`. */
const BinaryString = Schema.String.annotate({ format: "binary" })

/** A file part. Its JSON side exists for the OpenAPI document only: a file is never read from JSON. */
export const FilePart = Schema.declare((u: unknown): u is FormFile => u instanceof FormFile, {
  expected: "a file",
  message: "must be a file",
  toCodecJson: () =>
    Schema.link<FormFile>()(BinaryString, {
      decode: SchemaGetter.forbidden(() => "a file part is sent as a form part, not as JSON"),
      encode: SchemaGetter.transform((file: FormFile) => file.filename)
    })
})

/** A text field (a file sent in its place is refused). */
export const TextField = Schema.String.annotate({ message: "must be a text field, not a file" })

/** A refused document: the issue carries the message the 400 names the field with. */
const refuse = (message: string) => Effect.fail(new SchemaIssue.InvalidValue({ message }))

/**
 * A JSON document, as a file part or (for `curl -F 'field=<json>'`) a text field, parsed. The
 * part's bytes are read here; a file that cannot be read back is a defect (500), not a 400. A
 * document over `JSON_MAX_BYTES` or nested deeper than `JSON_MAX_DEPTH` is refused before parsing.
 * `description` documents the field (on the form's side: the OpenAPI document shows that side).
 */
export const jsonDocument = (description?: string) =>
  Schema.Union([FilePart, Schema.String]).annotate(description === undefined ? {} : { description }).pipe(
  Schema.decodeTo(Schema.Unknown, {
    decode: SchemaGetter.transformEffect((part: FormFile | string) =>
      Effect.flatMap(typeof part === "string" ? Effect.succeed(part) : Effect.orDie(part.text), (text) => {
        const size = typeof part === "string" ? utf8Length(text) : part.size
        if (size > JSON_MAX_BYTES) return refuse(sizeMessage())
        if (textNestsDeeperThan(text, JSON_MAX_DEPTH)) return refuse(depthMessage())
        try {
          return Effect.succeed<unknown>(JSON.parse(text))
        } catch (e) {
          const reason = e instanceof Error ? e.message : String(e)
          return refuse(`is not valid JSON (${reason})`)
        }
      })
    ),
    encode: SchemaGetter.transform((value: unknown): FormFile | string => JSON.stringify(value))
  })
)

export const JsonDocument = jsonDocument()

/** `$name` / `#name`: a dynamic parameter (text, or a file for `$file(...)`); the use case matches them to placeholders. */
export const ParamFields = Schema.Record(
  Schema.TemplateLiteral([Schema.Literals(["$", "#"]), Schema.String]),
  Schema.Union([Schema.String, FilePart])
)

/** The dynamic parameters of a decoded form (its `$`/`#` fields), in the order sent, as the use cases take them. */
export const paramsOf = (form: typeof ParamFields.Type): ReadonlyArray<SuppliedParam<UploadedFile>> =>
  Object.entries(form as Readonly<Record<string, unknown>>).flatMap(([field, value]): ReadonlyArray<SuppliedParam<UploadedFile>> => {
    if (!isParamField(field)) return []
    if (typeof value === "string") return [{ field, value: { _tag: "Text", text: value } }]
    if (!(value instanceof FormFile)) return []
    return [{
      field,
      value: {
        _tag: "File",
        file: { filename: value.filename, content_type: value.contentType || "application/octet-stream", content: value.content, size: value.size }
      }
    }]
  })
