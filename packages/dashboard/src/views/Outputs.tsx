/**
 * Output previews. Downloads need the bearer header, so each file is fetched once and shown from
 * an object URL: images inline, video and audio in a player, other types as download links; and
 * every output at once as the server's ZIP archive ("Download all").
 */
import { useEffect, useState } from "preact/hooks"
import { call } from "../api.js"
import type { OutputData } from "../types.js"
import { ErrorBox } from "../ui.js"

/** How the page shows a type: images, video and audio in place (not SVG: a download link). */
const mediaKind = (type: string): "image" | "video" | "audio" | undefined =>
  /^image\/svg/i.test(type) ? undefined : (/^(image|video|audio)\//i.exec(type)?.[1]?.toLowerCase() as "image" | "video" | "audio" | undefined)

/** Bytes the client read as a Blob of `type` (a copy on an ArrayBuffer of its own: what a Blob is made of). */
const blobOf = (bytes: Uint8Array | void, type: string): Blob => {
  // The answers without a body (304, 307) are never seen: no If-None-Match is sent, redirects are followed.
  if (!(bytes instanceof Uint8Array)) throw new Error("The server answered without the file")
  return new Blob([bytes.slice()], { type })
}

/** Saves `blob` as `filename` through a temporary link. */
const save = (blob: Blob, filename: string) => {
  const a = document.createElement("a")
  a.href = URL.createObjectURL(blob)
  a.download = filename
  a.click()
  setTimeout(() => URL.revokeObjectURL(a.href), 0)
}

const OutputItem = ({ workflowId, output }: { readonly workflowId: string; readonly output: OutputData }) => {
  const [url, setUrl] = useState<string | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)
  const kind = mediaKind(output.content_type)
  /** The file, with its content type. */
  const fetchFile = () =>
    call((api) => api.workflows.output({ params: { id: workflowId, output_id: output.id }, headers: {} }))
      .then((bytes) => blobOf(bytes, output.content_type))
  useEffect(() => {
    if (kind === undefined) return
    let objectUrl: string | undefined
    let live = true
    fetchFile().then((blob) => {
      objectUrl = URL.createObjectURL(blob)
      if (live) setUrl(objectUrl)
    }, setError)
    return () => {
      live = false
      if (objectUrl !== undefined) URL.revokeObjectURL(objectUrl)
    }
  }, [workflowId, output.id])
  const download = async () => {
    try {
      save(await fetchFile(), output.filename)
    } catch (e) {
      setError(e)
    }
  }
  return (
    <figure class="output">
      {url !== undefined && kind === "image" && <img src={url} alt={`Output ${output.filename} of node ${output.node_id}`} />}
      {url !== undefined && kind === "video" && <video src={url} controls loop muted playsInline aria-label={`Output ${output.filename} of node ${output.node_id}`} />}
      {url !== undefined && kind === "audio" && <audio src={url} controls aria-label={`Output ${output.filename} of node ${output.node_id}`} />}
      <figcaption>
        {url !== undefined
          ? <a href={url} download={output.filename}>{output.filename}</a>
          : <button type="button" class="link" onClick={download}>Download {output.filename}</button>}
        <span class="muted"> {output.content_type}, {output.size} bytes, node {output.node_id}</span>
      </figcaption>
      <ErrorBox error={error} />
    </figure>
  )
}

/** Every output as one ZIP archive (streamed by the server), saved as `<workflow name>-outputs.zip`. */
const DownloadAll = ({ workflowId, name }: { readonly workflowId: string; readonly name: string }) => {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<unknown>(undefined)
  const download = async () => {
    setBusy(true)
    setError(undefined)
    try {
      const bytes = await call((api) => api.workflows.outputsZip({ params: { id: workflowId } }))
      save(blobOf(bytes, "application/zip"), `${name}-outputs.zip`)
    } catch (e) {
      setError(e)
    } finally {
      setBusy(false)
    }
  }
  return (
    <p>
      <button type="button" onClick={download} disabled={busy}>{busy ? "Preparing the archive…" : "Download all (ZIP)"}</button>
      <ErrorBox error={error} />
    </p>
  )
}

export const Outputs = ({ workflowId, name, outputs }: {
  readonly workflowId: string
  readonly name: string
  readonly outputs: ReadonlyArray<OutputData>
}) =>
  outputs.length === 0
    ? <p class="muted">No outputs yet.</p>
    : (
      <>
        <DownloadAll workflowId={workflowId} name={name} />
        <div class="outputs">{outputs.map((o) => <OutputItem key={o.id} workflowId={workflowId} output={o} />)}</div>
      </>
    )
