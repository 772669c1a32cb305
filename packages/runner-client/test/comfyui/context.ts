/**
 * What the real-ComfyUI suites get from their project (vitest.comfyui.config.ts) and its global
 * setup: the ComfyUI version of the project, and the setup script and install directory, or null
 * when the machine has no ComfyUI source (the suites then skip).
 */
import type { ComfyUISetup } from "@wes/runner-client/testing"
import { inject } from "vitest"

export interface ComfyUIContext {
  readonly script: string
  readonly version: string
  readonly dir: string
  readonly pidDir: string
}

declare module "vitest" {
  export interface ProvidedContext {
    /** The ComfyUI version this project runs against (its `COMFYUI_VERSION`). */
    comfyuiVersion: string
    comfyui: ComfyUIContext | null
  }
}

/** The ComfyUI version of this run (known even when the suites skip). */
export const comfyUIVersion = (): string => inject("comfyuiVersion")

/** The ComfyUI setup of this run, or undefined when the suites must skip. */
export const comfyUISetup = (): ComfyUISetup | undefined => inject("comfyui") ?? undefined

/** A suite's title with the ComfyUI version it runs against: `<title> (ComfyUI 0.3.45)`. */
export const onComfyUI = (title: string): string => `${title} (ComfyUI ${comfyUIVersion()})`
