/** Webhooks: endpoints, the outbox of deliveries, signing-independent policy, the delivery pool. */
export * from "./Deliverer.js"
export * from "./DeliveryPolicy.js"
export * from "./Webhook.js"
export * from "./WebhookRepository.js"
export * from "./WebhookSender.js"
export * from "./WebhookService.js"
export { webhookAttemptDuration, webhookAttempts, webhookDeliveries, webhookDeliveryLatency } from "../observability/Metrics.js"
