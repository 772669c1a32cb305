/**
 * Requests to the /v1 API with the signed-in token (kept in session storage: it ends with the
 * tab). Every failure becomes an `ApiError` carrying the server's own message and details.
 */
const KEY = "wes.token"

export const getToken = (): string | null => sessionStorage.getItem(KEY)
export const setToken = (token: string): void => sessionStorage.setItem(KEY, token)
export const clearToken = (): void => sessionStorage.removeItem(KEY)

export interface FieldIssue {
  readonly field: string
  readonly message: string
}

export class ApiError extends Error {
  constructor(readonly status: number, message: string, readonly details: ReadonlyArray<FieldIssue> = []) {
    super(message)
  }
}

/** Called when a request of the signed-in user answers 401 (token revoked or expired). */
let onUnauthorized: (message: string) => void = () => {}
export const setUnauthorizedHandler = (f: (message: string) => void): void => {
  onUnauthorized = f
}

export const authHeaders = (token: string | null = getToken()): Headers => {
  const headers = new Headers()
  if (token !== null) headers.set("authorization", `Bearer ${token}`)
  return headers
}

const errorOf = async (res: Response): Promise<ApiError> => {
  const body: unknown = await res.json().catch(() => undefined)
  if (typeof body === "object" && body !== null && "message" in body && typeof body.message === "string") {
    const details = "details" in body && Array.isArray(body.details) ? (body.details as ReadonlyArray<FieldIssue>) : []
    return new ApiError(res.status, body.message, details)
  }
  return new ApiError(res.status, `The server answered ${res.status} ${res.statusText}`)
}

/** A raw response (2xx), or an ApiError. */
export const request = async (path: string, init: RequestInit = {}, token: string | null = getToken()): Promise<Response> => {
  const headers = authHeaders(token)
  new Headers(init.headers).forEach((value, key) => headers.set(key, value))
  let res: Response
  try {
    res = await fetch(path, { ...init, headers })
  } catch {
    throw new ApiError(0, "The server cannot be reached")
  }
  if (res.ok) return res
  const error = await errorOf(res)
  if (res.status === 401 && token !== null && token === getToken()) onUnauthorized(error.message)
  throw error
}

/** The JSON body of a request (undefined for 204). */
export const api = async <T>(path: string, init: RequestInit = {}, token?: string | null): Promise<T> => {
  const res = await request(path, init, token === undefined ? getToken() : token)
  return (res.status === 204 ? undefined : await res.json()) as T
}

export const postJson = <T>(path: string, method: string, body: unknown): Promise<T> =>
  api<T>(path, { method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) })

/** `?a=1&b=2` from the defined values. */
export const query = (params: Record<string, string | number | undefined>): string => {
  const q = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== "") q.set(k, String(v))
  const s = q.toString()
  return s === "" ? "" : `?${s}`
}
