/** Reading a Prometheus text answer (`GET /metrics`) in tests. */

/** The value of the series of `name` whose labels include every one of `labels`, whatever their order; undefined when absent. */
export const seriesValue = (text: string, name: string, labels: Record<string, string>): number | undefined => {
  const line = text.split("\n").find((l) =>
    l.startsWith(name + "{") && Object.entries(labels).every(([k, v]) => l.slice(name.length, l.lastIndexOf("}") + 1).includes(`${k}="${v}"`))
  )
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1))
}

/** The gauges `wes_workflows` (unfinished statuses) and `wes_runner_in_flight` of the user runner `runnerId`. */
export const workGauges = (text: string, runnerId: string) => ({
  accepted: seriesValue(text, "wes_workflows", { status: "accepted" }),
  uploaded: seriesValue(text, "wes_workflows", { status: "uploaded" }),
  queued: seriesValue(text, "wes_workflows", { status: "queued" }),
  running: seriesValue(text, "wes_workflows", { status: "running" }),
  in_flight: seriesValue(text, "wes_runner_in_flight", { runner_id: runnerId, runner_kind: "user" })
})
