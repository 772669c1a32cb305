export * from "./Api.js"
export * from "./ApiErrors.js"
export * from "./Forms.js"
