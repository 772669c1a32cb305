/**
 * The model files a workflow or template declares (issue 34): where each comes from (`url`), what
 * it must hash to (`sha256`), and where it goes on the runner (`folder`/`filename`). Before an agent
 * runner posts the prompt it makes sure each is in place (dispatch/Provisioning.ts). A workflow
 * made from a template takes the template's files plus its own, one per `folder/filename`; the
 * same place declared with two different hashes is refused (the 400 names it).
 */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { ValidationError } from "./Errors.js"
import { decodeRequest } from "./Validation.js"

/** ComfyUI's model folders a declared model may go to (`folder_paths` names). */
export const MODEL_FOLDERS = [
  "checkpoints", "loras", "vae", "text_encoders", "clip", "clip_vision", "diffusion_models", "unet",
  "controlnet", "upscale_models", "embeddings", "style_models", "hypernetworks", "gligen",
  "photomaker", "vae_approx", "audio_encoders", "model_patches"
] as const

export const ModelFolder = Schema.Literals(MODEL_FOLDERS).annotate({
  identifier: "ModelFolder",
  message: `must be one of ComfyUI's model folders: ${MODEL_FOLDERS.join(", ")}`
})

const Sha256 = Schema.String.check(Schema.isPattern(/^[0-9a-f]{64}$/, { message: "must be 64 lowercase hex digits" }))
/** A file name inside a model folder: no path separators, no leading dot, at most 255 characters. */
const ModelFilename = Schema.String.check(
  Schema.makeFilter((s) =>
    (s.length >= 1 && s.length <= 255 && !/[/\\]/.test(s) && !s.includes("\u0000") && !s.startsWith("."))
      || "must be a file name (1-255 characters, no slashes, not starting with a dot)"
  )
)
const ModelUrl = Schema.String.check(
  Schema.makeFilter((s) => (URL.canParse(s) && /^https?:$/.test(new URL(s).protocol)) || "must be an http:// or https:// URL")
)

/** A model file a workflow or template needs on its runner. */
export const ModelFile = Schema.Struct({
  url: ModelUrl,
  sha256: Sha256,
  folder: ModelFolder,
  filename: ModelFilename
}).annotate({ identifier: "ModelFile" })
export interface ModelFile extends Schema.Schema.Type<typeof ModelFile> {}

/** At most this many model files per workflow. */
export const MAX_MODEL_FILES = 20

export const ModelFiles = Schema.Array(ModelFile).check(
  Schema.isMaxLength(MAX_MODEL_FILES, { message: `at most ${MAX_MODEL_FILES} model files are allowed` })
)

/** Where a model file goes on the runner: `folder/filename`, what two declarations must agree on. */
export const modelPlace = (m: { readonly folder: string; readonly filename: string }): string => `${m.folder}/${m.filename}`

const decodeField = decodeRequest(Schema.Struct({ models: ModelFiles }))

/**
 * A request's `models` (the parsed JSON of the field; absent: none), checked: each file well
 * formed, at most `MAX_MODEL_FILES`, and no place declared twice with different hashes (a place
 * declared twice alike is kept once).
 */
export const decodeModels = (input: unknown): Effect.Effect<ReadonlyArray<ModelFile>, ValidationError> =>
  input === undefined
    ? Effect.succeed([])
    : Effect.flatMap(decodeField({ models: input }), ({ models }) => Effect.fromResult(mergeModels([], models)))

/**
 * `base`'s files then `own`'s, one per place (the first declaration of a place is kept), at most
 * `MAX_MODEL_FILES`. A place declared with two different `sha256` is a 400 naming it.
 */
export const mergeModels = (
  base: ReadonlyArray<ModelFile>,
  own: ReadonlyArray<ModelFile>
): Result.Result<ReadonlyArray<ModelFile>, ValidationError> => {
  const byPlace = new Map<string, ModelFile>()
  for (const m of [...base, ...own]) {
    const place = modelPlace(m)
    const seen = byPlace.get(place)
    if (seen === undefined) byPlace.set(place, m)
    else if (seen.sha256 !== m.sha256) {
      return Result.fail(ValidationError.field(
        "models",
        `${place} is declared twice with different sha256 (${seen.sha256} and ${m.sha256})`
      ))
    }
  }
  if (byPlace.size > MAX_MODEL_FILES) {
    return Result.fail(ValidationError.field("models", `at most ${MAX_MODEL_FILES} model files are allowed (with the template's: ${byPlace.size})`))
  }
  return Result.succeed([...byPlace.values()])
}
