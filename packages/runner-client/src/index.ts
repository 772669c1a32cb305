/**
 * @wes/runner-client: talks to ComfyUI runners. `RunnerGatewayNode` implements core's
 * `RunnerGateway` over ComfyUI's HTTP API (undici) and WebSocket (`ws`); the pieces are
 * exported for reuse. The fake ComfyUI for tests is in `@wes/runner-client/testing`.
 */
/** The HTTP operations (probe, upload, submit, queue, history, cancel, download) on an undici `Dispatcher`. */
export { type ComfyClient, type ComfyClientOptions, makeComfyClient } from "./ComfyClient.js"
/** Decoders of ComfyUI's HTTP answers into core's types. */
export { outputFiles, toPromptHistory, toQueueSnapshot } from "./ComfyResponses.js"
/** The address policy: private/loopback/link-local... addresses, resolving host names, the words of a refusal. */
export { isPrivateAddress, type RefusalWords, refusalMessages, type Resolver, systemResolver, unbracket } from "./AddressPolicy.js"
/** Connections that reach only the addresses the policy allows, exactly the ones it checked (undici, `ws`). */
export {
  type AddressGuard,
  AddressRefused,
  guardedAgent,
  guardedConnector,
  guardedLookup,
  guardedSocket,
  literalRefusal,
  refusedBy
} from "./GuardedConnect.js"
/** Agent runners' connections: CONNECT streams on the agent's HTTP/2 session (issue 34). */
export {
  AGENT_NOT_CONNECTED,
  agentEndpoint,
  agentRunnerOf,
  type AgentSessions,
  agentTarget,
  AgentTunnelFailed,
  openTunnel,
  tunnelAgent,
  tunnelConnector,
  tunnelSocket
} from "./AgentTunnel.js"
/** An output file's content type, by its extension. */
export { outputContentType } from "./ContentTypes.js"
/** A runner's WebSocket as a reconnecting `Stream<RunnerEvent>`. */
export { type RunnerConnectionOptions, runnerEvents, websocketUrl } from "./RunnerConnection.js"
/** The gateway layer, its scoped constructor and connection pool, and their options. */
export { makeRunnerGateway, runnerAgent, RunnerGatewayNode, type RunnerGatewayOptions } from "./RunnerGatewayNode.js"
/** WebSocket message decoding. */
export {
  attributeImages,
  decodeBinaryFrame,
  decodeFrame,
  type Decoded,
  FEATURE_FLAGS_MESSAGE,
  RunnerMessage,
  toRunnerEvent
} from "./RunnerMessages.js"
