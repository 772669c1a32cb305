/**
 * What the real-ComfyUI suites get from their global setup: the setup script and install
 * directory, or null when the machine has no ComfyUI source (the suites then skip).
 */
import type { ComfyUISetup } from "@wes/runner-client/testing"
import { inject } from "vitest"

export interface ComfyUIContext {
  readonly script: string
  readonly dir: string
  readonly pidDir: string
}

declare module "vitest" {
  export interface ProvidedContext {
    comfyui: ComfyUIContext | null
  }
}

/** The ComfyUI setup of this run, or undefined when the suites must skip. */
export const comfyUISetup = (): ComfyUISetup | undefined => inject("comfyui") ?? undefined
