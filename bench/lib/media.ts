/** B11's tools: a process's RSS and peak from /proc, curl's timing of a download, a multipart body of one large file. */
import { execFile } from "node:child_process"
import * as fs from "node:fs"

/** Bytes of a process's RSS now, and its peak since the last `resetPeak`. */
export const memoryOf = (pid: number): { readonly rss: number; readonly peak: number } => {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8")
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? Number.NaN) * 1024
  return { rss: kb("VmRSS"), peak: kb("VmHWM") }
}

/** Resets a process's peak RSS (`VmHWM`) to its RSS now (Linux `clear_refs`, 5). */
export const resetPeak = (pid: number): void => fs.writeFileSync(`/proc/${pid}/clear_refs`, "5")

/** curl downloading `url` to /dev/null: bytes received and seconds taken, as curl measures them. */
export const curlDownload = (url: string, headers: Readonly<Record<string, string>> = {}): Promise<{ readonly bytes: number; readonly seconds: number }> =>
  new Promise((resolve, reject) => {
    const args = ["-sS", "-f", "-o", "/dev/null", "-w", "%{size_download} %{time_total}", ...Object.entries(headers).flatMap(([k, v]) => ["-H", `${k}: ${v}`]), url]
    execFile("curl", args, (error, stdout) => {
      if (error !== null) return reject(error)
      const [bytes, seconds] = stdout.trim().split(" ").map(Number)
      resolve({ bytes: bytes!, seconds: seconds! })
    })
  })

/** A create request's multipart body: a name, `workflow` and a `$data` file of `size` bytes. */
export const largeForm = (workflow: unknown, size: number, boundary: string): Buffer => {
  const file = Buffer.alloc(size)
  for (let i = 0; i < size; i += 4096) file.writeUInt32BE(i / 4096, i)
  return Buffer.concat([
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\nbench media\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="workflow_json"\r\n\r\n${JSON.stringify(workflow)}\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="$data"; filename="input.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`
    ),
    file,
    Buffer.from(`\r\n--${boundary}--\r\n`)
  ])
}
