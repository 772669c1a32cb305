/**
 * `POST /cleanup` (issue 34, item 4): deletes one run's files from ComfyUI's folders once WES
 * holds them: its outputs (`output` or `temp` folder) and its uploaded inputs (`input`). Only
 * regular files named by the request, inside their folder: a name that could leave the folder
 * (`..`, an absolute path, a separator in a file name) refuses the whole request before anything
 * is deleted; a path that resolves outside its folder through a symlink, or that is not a
 * regular file, is skipped and logged. Missing files are skipped (already gone is the goal).
 * With cleanup off the answer is `{deleted: 0, skipped: <all>}`.
 */
import * as fs from "node:fs/promises"
import * as path from "node:path"
import type { CleanupRequest, CleanupResult } from "@wes/runner-client/agent-protocol"
import { BadRequest } from "./Body.js"
import { type AgentLog, describe } from "./Log.js"
import { type AgentOptions, folderOf } from "./Options.js"

type FileRef = CleanupRequest["outputs"][number]
type Folder = "output" | "temp" | "input"

const badName = (name: string) =>
  name === "" || name === "." || name === ".." || name.includes("/") || name.includes("\\") || name.includes("\u0000")

const badSubfolder = (subfolder: string) =>
  subfolder.includes("\u0000") || subfolder.includes("\\") || path.isAbsolute(subfolder)
  || subfolder.split("/").some((s) => s === "..")

/** The folder a reference names, or BadRequest when it names none allowed or leaves it. */
const folderFor = (ref: FileRef, allowed: ReadonlyArray<Folder>): Folder => {
  const folder = allowed.find((f) => f === ref.type)
  if (folder === undefined) throw new BadRequest(400, `${JSON.stringify(ref.type)} is not one of ${allowed.join(", ")}`)
  if (badName(ref.filename) || badSubfolder(ref.subfolder)) {
    throw new BadRequest(400, `refused path ${JSON.stringify(path.posix.join(ref.subfolder, ref.filename))}: it leaves its folder`)
  }
  return folder
}

type Outcome = "deleted" | "skipped"

const removeOne = async (root: string, ref: FileRef, log: AgentLog): Promise<Outcome> => {
  const missing = (e: unknown) => (e as NodeJS.ErrnoException).code === "ENOENT"
  try {
    const base = await fs.realpath(root)
    const parent = await fs.realpath(path.join(base, ref.subfolder))
    if (parent !== base && !parent.startsWith(base + path.sep)) {
      log("warn", `cleanup skipped ${ref.subfolder}/${ref.filename}: its folder leads outside ${root}`)
      return "skipped"
    }
    const file = path.join(parent, ref.filename)
    const stat = await fs.lstat(file)
    if (!stat.isFile()) {
      log("warn", `cleanup skipped ${file}: not a regular file`)
      return "skipped"
    }
    await fs.unlink(file)
    return "deleted"
  } catch (e) {
    if (missing(e)) return "skipped"
    log("warn", `cleanup could not delete ${path.join(root, ref.subfolder, ref.filename)}: ${describe(e)}`)
    return "skipped"
  }
}

export const cleanupRun = async (options: AgentOptions, request: CleanupRequest, log: AgentLog): Promise<CleanupResult> => {
  const total = request.outputs.length + request.inputs.length
  if (!options.cleanup) return { deleted: 0, skipped: total }
  // Everything is checked before anything is deleted.
  const planned = [
    ...request.outputs.map((ref) => ({ ref, folder: folderFor(ref, ["output", "temp"]) })),
    ...request.inputs.map((ref) => ({ ref, folder: folderFor(ref, ["input"]) }))
  ].map(({ ref, folder }) => ({ ref, root: folderOf(options, folder) }))
  let deleted = 0
  for (const { ref, root } of planned) {
    if ((await removeOne(root, ref, log)) === "deleted") deleted++
  }
  return { deleted, skipped: total - deleted }
}
