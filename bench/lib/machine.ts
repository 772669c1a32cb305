/** A description of the machine the figures come from. */
import * as os from "node:os"
import pg from "pg"

export const databaseUrl = process.env["DATABASE_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"

export const describeMachine = async (): Promise<string> => {
  const cpus = os.cpus()
  let postgres = "unavailable"
  const client = new pg.Client({ connectionString: databaseUrl })
  try {
    await client.connect()
    const r = await client.query<{ version: string }>("SELECT version()")
    postgres = r.rows[0]!.version.split(",")[0]!
  } catch {
    // Reported as unavailable.
  } finally {
    await client.end().catch(() => undefined)
  }
  return [
    `${cpus.length} × ${cpus[0]?.model.trim() ?? "unknown CPU"}`,
    `${Math.round(os.totalmem() / 2 ** 30)} GiB RAM`,
    `${os.type()} ${os.release()}`,
    `Node ${process.version}`,
    postgres
  ].join(", ")
}
