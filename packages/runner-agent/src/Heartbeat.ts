/**
 * Noticing a WES that is gone without saying so (a host that died, a NAT that forgot the
 * connection: no FIN ever arrives). A ping every `intervalMs`; when nothing at all came back
 * from WES (no pong and no data) by the next tick, `onSilent` is called. Data counts as well as
 * pongs because on a slow link a pong can wait behind megabytes WES is sending.
 */
import type { WebSocket } from "ws"

/** Starts the heartbeat on an open socket; the returned function stops it. */
export const heartbeat = (ws: WebSocket, intervalMs: number, onSilent: () => void): () => void => {
  let heard = true
  const hear = () => (heard = true)
  ws.on("pong", hear)
  ws.on("message", hear)
  const timer = setInterval(() => {
    if (!heard) return onSilent()
    heard = false
    ws.ping()
  }, intervalMs)
  return () => {
    clearInterval(timer)
    ws.off("pong", hear)
    ws.off("message", hear)
  }
}
