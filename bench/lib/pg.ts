/** Fresh PostgreSQL schemas for benchmark runs (each run starts empty and cleans up after). */
import pg from "pg"
import { databaseUrl } from "./machine.js"

export interface BenchSchema {
  readonly name: string
  /** DATABASE_URL with `search_path` set to the schema. */
  readonly url: string
  readonly drop: () => Promise<void>
}

export const withSchemaUrl = (base: string, schema: string): string => {
  const url = new URL(base)
  url.searchParams.set("options", `-c search_path=${schema}`)
  return url.toString()
}

export const createSchema = async (prefix = "wes_bench"): Promise<BenchSchema> => {
  const name = `${prefix}_${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  await client.query(`CREATE SCHEMA ${name}`)
  await client.end()
  return {
    name,
    url: withSchemaUrl(databaseUrl, name),
    drop: async () => {
      const c = new pg.Client({ connectionString: databaseUrl })
      await c.connect()
      await c.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`)
      await c.end()
    }
  }
}
