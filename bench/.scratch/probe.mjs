import { fork } from "node:child_process"
const child = fork(new URL("../servers/wes.ts", import.meta.url).pathname, [], {
  execArgv: ["--import", "tsx", "--conditions=@wes/source"],
  env: { ...process.env, BENCH_COUNT_OPS: "on", BENCH_COUNT_FIBERS: "on", BENCH_DISPATCH: process.env.D ?? "on" },
  stdio: ["ignore", "inherit", "inherit", "ipc"]
})
let next = 0
const pending = new Map()
const ready = new Promise((resolve) => child.on("message", (m) => {
  if (m.type === "ready") resolve(m)
  else { const p = pending.get(m.id); pending.delete(m.id); m.error ? p.reject(new Error(m.error)) : p.resolve(m.result) }
}))
const call = (cmd, args) => new Promise((resolve, reject) => { const id = next++; pending.set(id, { resolve, reject }); child.send({ id, cmd, args }) })
const r = await ready
console.log("ready", r)
const s = await call("setup", {})
console.log("setup", s)
console.log("counters", JSON.stringify(await call("counters")))
const res = await fetch(r.url + "/v1/user", { headers: { authorization: `Bearer ${s.token}` } })
console.log("GET /v1/user", res.status)
const c2 = await call("counters")
console.log("counters", JSON.stringify(c2))
console.log("seed", await call("seed", { n: 5, workflow: { "1": { class_type: "EmptyImage", inputs: {} } } }).catch(e => e.message.slice(0, 300)))
console.log("unfinished", await call("unfinished"))
console.log("opSources", (await call("opSources")).slice(0, 5))
console.log("stopDispatcher", await call("stopDispatcher"), "startDispatcher", await call("startDispatcher"), await call("stopDispatcher"))
console.log("cpu", await call("cpu"))
child.kill("SIGTERM")
