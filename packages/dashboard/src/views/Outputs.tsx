/**
 * Output previews. Downloads need the bearer header, so each file is fetched once and shown from
 * an object URL: images inline, other types as download links.
 */
import { useEffect, useState } from "preact/hooks"
import { call } from "../api.js"
import type { OutputData } from "../types.js"
import { ErrorBox } from "../ui.js"

const OutputItem = ({ workflowId, output }: { readonly workflowId: string; readonly output: OutputData }) => {
  const [url, setUrl] = useState<string | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)
  const image = output.content_type.startsWith("image/")
  /** The file, with its content type. */
  const fetchFile = () =>
    call((api) => api.workflows.output({ params: { id: workflowId, output_id: output.id } }))
      // A copy on an ArrayBuffer of its own: what a Blob is made of.
      .then((bytes) => new Blob([bytes.slice()], { type: output.content_type }))
  useEffect(() => {
    if (!image) return
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
      const blob = await fetchFile()
      const a = document.createElement("a")
      a.href = URL.createObjectURL(blob)
      a.download = output.filename
      a.click()
      setTimeout(() => URL.revokeObjectURL(a.href), 0)
    } catch (e) {
      setError(e)
    }
  }
  return (
    <figure class="output">
      {image && url !== undefined && <img src={url} alt={`Output ${output.filename} of node ${output.node_id}`} />}
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

export const Outputs = ({ workflowId, outputs }: { readonly workflowId: string; readonly outputs: ReadonlyArray<OutputData> }) =>
  outputs.length === 0
    ? <p class="muted">No outputs yet.</p>
    : <div class="outputs">{outputs.map((o) => <OutputItem key={o.id} workflowId={workflowId} output={o} />)}</div>
