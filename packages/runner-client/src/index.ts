/**
 * @wes/runner-client: talks to ComfyUI runners. `RunnerGatewayLive` / `RunnerGatewayNode`
 * implement core's `RunnerGateway` over ComfyUI's HTTP API and WebSocket; the pieces are
 * exported for reuse. The fake ComfyUI for tests is in `@wes/runner-client/testing`.
 */
/** The HTTP operations (probe, upload, submit, queue, history, cancel, download) on any `HttpClient`. */
export { type ComfyClient, type ComfyClientOptions, makeComfyClient } from "./ComfyClient.js"
/** Decoders of ComfyUI's HTTP answers into core's types. */
export { outputFiles, toPromptHistory, toQueueSnapshot } from "./ComfyResponses.js"
/** A runner's WebSocket as a reconnecting `Stream<RunnerEvent>`. */
export { type RunnerConnectionOptions, runnerEvents, websocketUrl } from "./RunnerConnection.js"
/** The gateway layers and their options. */
export { makeRunnerGateway, RunnerGatewayLive, RunnerGatewayNode, type RunnerGatewayOptions } from "./RunnerGatewayLive.js"
/** WebSocket message decoding. */
export { decodeBinaryFrame, decodeFrame, type Decoded, FEATURE_FLAGS_MESSAGE, RunnerMessage, toRunnerEvent } from "./RunnerMessages.js"
