/**
 * @wes/http-node: the reference /v1 server. `WesApi` is the HttpApi declaration (server, OpenAPI
 * and typed client come from it); `serverLayer` is the whole server as layers; `wes serve` runs it.
 */
export * from "@wes/api"
/** The runner agents' side of WES (issue 34): their endpoint, the hub of their connections, RunnerAgents over it. */
export { AgentEndpoint } from "./AgentEndpoint.js"
export { AgentHub, type AgentHubOptions, type AgentLink } from "./AgentHub.js"
export { RunnerAgentsLive } from "./AgentRunnerAgents.js"
export { loadConfig, WesConfig } from "./Config.js"
export { CryptoNode } from "./CryptoNode.js"
export { FsBlobStoreLive, makeFsBlobStore } from "./FsBlobStore.js"
export { jsonLogger, jsonLoggerLayer, type LogSink } from "./Logging.js"
export { coreLayer, serverLayer, storeLayer, untraced } from "./Main.js"
/** What `wes serve` starts beside the server: young collections when dropped byte buffers pile up (GarbageNudge.ts). */
export { startGarbageNudge } from "./GarbageNudge.js"
export { clientIp, makeRateLimiter, parseRateLimit, parseTrustProxy, type RateLimiter, type RateLimitSettings } from "./RateLimit.js"
export { type InputFetchOptions, inputFetcherNode } from "./InputFetcherNode.js"
export { denyPrivateGateway, denyPrivateProbe, isPrivateAddress, type Resolver, runnerGuard } from "./RunnerAddressPolicy.js"
export { httpLayer, type HttpOptions } from "./Server.js"
export { webhookDeliveryLayer, type WebhookDeliveryOptions } from "./WebhookDelivery.js"
export { webhookGuard, webhookSenderNode, type WebhookSendOptions } from "./WebhookSenderNode.js"
export { signWebhook, type WebhookEvent, type WebhookHeaders, verifyWebhook } from "./WebhookSigning.js"
