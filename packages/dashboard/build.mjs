// Builds the dashboard into dist/: index.html (served at /) and ui/app.js, ui/app.css (served at
// /ui/). One minified ES module; the build fails if its JavaScript is over 150 KB gzipped. Each
// file is written under a temporary name and renamed into place, so a server reading dist/ while
// a build runs (tests build it too) sees whole files.
import { build } from "esbuild"
import { mkdir, readFile, rename, writeFile } from "node:fs/promises"
import { gzipSync } from "node:zlib"
import { URL } from "node:url"
import console from "node:console"
import process from "node:process"

const LIMIT = 150 * 1024
const root = new URL(".", import.meta.url)
const dist = new URL("dist/", root)

const put = async (name, bytes) => {
  const target = new URL(name, dist)
  const temporary = new URL(`${name}.${process.pid}.tmp`, dist)
  await writeFile(temporary, bytes)
  await rename(temporary, target)
}

await mkdir(new URL("ui/", dist), { recursive: true })
const result = await build({
  entryPoints: [new URL("src/main.tsx", root).pathname],
  outfile: "app.js",
  write: false,
  bundle: true,
  minify: true,
  format: "esm",
  target: "es2022",
  platform: "browser",
  conditions: ["@wes/source"],
  jsx: "automatic",
  jsxImportSource: "preact",
  legalComments: "none",
  logLevel: "warning"
})
const js = result.outputFiles[0].contents
const gzipped = gzipSync(js).length
if (gzipped > LIMIT) throw new Error(`dashboard JavaScript is ${gzipped} bytes gzipped, over the ${LIMIT} byte budget`)
await put("ui/app.js", js)
await put("ui/app.css", await readFile(new URL("src/app.css", root)))
await put("index.html", await readFile(new URL("src/index.html", root)))
console.log(`dashboard: dist/ui/app.js is ${(gzipped / 1024).toFixed(1)} KB gzipped`)
