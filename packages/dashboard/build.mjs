// Builds the dashboard into dist/: index.html (served at /) and ui/app.js, ui/app.css (served at
// /ui/). One minified ES module; the build fails if its JavaScript is over 150 KB gzipped.
import { build } from "esbuild"
import { copyFile, mkdir, readFile, rm } from "node:fs/promises"
import { gzipSync } from "node:zlib"
import { URL } from "node:url"
import console from "node:console"

const LIMIT = 150 * 1024
const root = new URL(".", import.meta.url)
const dist = new URL("dist/", root)

await rm(dist, { recursive: true, force: true })
await mkdir(new URL("ui/", dist), { recursive: true })
await build({
  entryPoints: [new URL("src/main.tsx", root).pathname],
  outfile: new URL("ui/app.js", dist).pathname,
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
await copyFile(new URL("src/index.html", root), new URL("index.html", dist))
await copyFile(new URL("src/app.css", root), new URL("ui/app.css", dist))
const gzipped = gzipSync(await readFile(new URL("ui/app.js", dist))).length
console.log(`dashboard: dist/ui/app.js is ${(gzipped / 1024).toFixed(1)} KB gzipped`)
if (gzipped > LIMIT) throw new Error(`dashboard JavaScript is ${gzipped} bytes gzipped, over the ${LIMIT} byte budget`)
