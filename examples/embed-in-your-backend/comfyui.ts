/**
 * The ComfyUI to run on: `COMFYUI_URL` (e.g. http://127.0.0.1:8188 for `python main.py --listen
 * 127.0.0.1 --port 8188`), or, when it is not set, a simulated ComfyUI in this process (the fake
 * from `@wes/runner-client/testing`, the one `WES_DEV=1` uses) so the example runs anywhere.
 */
import { FakeComfyUI } from "@wes/runner-client/testing"

export const comfyuiFromEnv = async (): Promise<{ readonly url: string; readonly close: () => Promise<void> }> => {
  const configured = process.env["COMFYUI_URL"]
  if (configured !== undefined && configured !== "") return { url: configured, close: () => Promise.resolve() }
  const fake = await FakeComfyUI.start()
  console.log(`COMFYUI_URL is not set: using a simulated ComfyUI at ${fake.url}`)
  return { url: fake.url, close: () => fake.close() }
}
