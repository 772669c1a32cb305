/**
 * @wes/runner-client/testing: a protocol-faithful fake ComfyUI server (HTTP + WebSocket on
 * 127.0.0.1) with fault hooks and request logs, for tests of anything that talks to runners;
 * and `RealComfyUI`, an unmodified ComfyUI started by a setup script, for integration tests.
 */
export {
  type ConnectionRecord,
  FakeComfyUI,
  type FakeComfyUIOptions,
  FakeComfyUIServer,
  type NodeFailure,
  type NodeReplace,
  type NodeMatch,
  type ObjectInfoOptions,
  type PromptSubmission,
  type RequestRecord,
  type RestartOptions,
  type UploadRecord
} from "./testing/FakeComfyUI.js"
/** A solid-colour PNG (to upload as an input image). */
export { inspectImage, solidPng } from "./testing/Png.js"
export {
  audioWorkflow,
  loadImageWorkflow,
  saveImageWorkflow,
  slowWorkflow,
  textWorkflow,
  videoWorkflow,
  websocketImageWorkflow
} from "./testing/Workflows.js"
/** An unmodified ComfyUI started by a setup script (integration tests against the real thing). */
export {
  type ComfyUISetup,
  DEFAULT_COMFYUI_VERSION,
  installComfyUI,
  killRecorded,
  locateComfyUISetup,
  RealComfyUI,
  type RealComfyUIOptions,
  WEBSOCKET_IMAGE_SAVE
} from "./testing/RealComfyUI.js"
