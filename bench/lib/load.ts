/** HTTP load with autocannon: requests per second and latency percentiles (ms). */
import autocannon from "autocannon"

export interface LoadResult {
  readonly rps: number
  readonly p50: number
  readonly p99: number
  readonly max: number
  readonly total: number
  readonly non2xx: number
  readonly errors: number
}

export const load = (options: {
  readonly url: string
  readonly connections: number
  readonly durationSeconds: number
  readonly method?: "GET" | "POST"
  readonly headers?: Record<string, string>
  readonly body?: Buffer | string
}): Promise<LoadResult> =>
  new Promise((resolve, reject) => {
    autocannon({
      url: options.url,
      connections: options.connections,
      duration: options.durationSeconds,
      method: options.method ?? "GET",
      headers: options.headers ?? {},
      ...(options.body === undefined ? {} : { body: options.body })
    }, (err, result) => {
      if (err) return reject(err)
      resolve({
        rps: result.requests.average,
        p50: result.latency.p50,
        p99: result.latency.p99,
        max: result.latency.max,
        total: result.requests.total,
        non2xx: result.non2xx,
        errors: result.errors
      })
    })
  })

/** Runs a load against a child and adds the child's CPU time per completed request (µs). */
export const withCpu = async (
  child: { readonly call: <A>(cmd: string) => Promise<A> },
  run: () => Promise<LoadResult>
): Promise<LoadResult & { readonly cpuPerRequest: number }> => {
  const before = await child.call<number>("cpu")
  const result = await run()
  const after = await child.call<number>("cpu")
  return { ...result, cpuPerRequest: (after - before) / Math.max(1, result.total) }
}
