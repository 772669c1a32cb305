/** The running node's latest preview image (the stream's `preview` events), shown while the workflow runs. */
import type { PreviewImage } from "../sse.js"

/** Types an `<img>` may show from a preview; anything else is not shown. */
const SHOWN = new Set(["image/jpeg", "image/png", "image/webp"])

export const LivePreview = ({ preview }: { readonly preview: PreviewImage | undefined }) =>
  preview === undefined || !SHOWN.has(preview.content_type) ? null : (
    <figure class="live-preview">
      <img src={`data:${preview.content_type};base64,${preview.image}`} alt="Live preview of the running node" data-testid="live-preview" />
      <figcaption class="muted">Live preview{preview.node === null ? "" : ` of node ${preview.node}`}</figcaption>
    </figure>
  )
