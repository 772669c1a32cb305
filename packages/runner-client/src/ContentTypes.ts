/**
 * The content type of an output file, by its extension. ComfyUI's `/view` answers what Python's
 * `mimetypes` finds on the runner's machine: a slim container image (no `/etc/mime.types`) answers
 * `application/octet-stream` for `.flac`, `.mkv`, `.ogg`, `.m4a` and `.glb`, Windows reads its
 * registry. So the types of the formats ComfyUI and its common custom nodes write (images,
 * animations, video, audio, 3D) come from this table, the same on every runner; for any other
 * extension the runner's answer stands (docs/decisions.md, "Output content types by extension").
 */
const BY_EXTENSION: Readonly<Record<string, string>> = {
  png: "image/png",
  apng: "image/apng",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  webp: "image/webp",
  gif: "image/gif",
  avif: "image/avif",
  bmp: "image/bmp",
  tif: "image/tiff",
  tiff: "image/tiff",
  svg: "image/svg+xml",
  jxl: "image/jxl",
  heic: "image/heic",
  heif: "image/heif",
  mp4: "video/mp4",
  m4v: "video/mp4",
  webm: "video/webm",
  mkv: "video/x-matroska",
  mov: "video/quicktime",
  avi: "video/x-msvideo",
  ogv: "video/ogg",
  mpg: "video/mpeg",
  mpeg: "video/mpeg",
  "3gp": "video/3gpp",
  flac: "audio/flac",
  mp3: "audio/mpeg",
  wav: "audio/wav",
  ogg: "audio/ogg",
  opus: "audio/ogg",
  m4a: "audio/mp4",
  aac: "audio/aac",
  weba: "audio/webm",
  mka: "audio/x-matroska",
  aif: "audio/aiff",
  aiff: "audio/aiff",
  glb: "model/gltf-binary",
  gltf: "model/gltf+json",
  obj: "model/obj",
  stl: "model/stl",
  json: "application/json",
  txt: "text/plain"
}

/** The type of `filename` by its extension, else what the runner said (`runner`), else `application/octet-stream`. */
export const outputContentType = (filename: string, runner: string | undefined): string => {
  const dot = filename.lastIndexOf(".")
  const known = dot < 0 ? undefined : BY_EXTENSION[filename.slice(dot + 1).toLowerCase()]
  return known ?? (runner !== undefined && runner.trim() !== "" ? runner : "application/octet-stream")
}
