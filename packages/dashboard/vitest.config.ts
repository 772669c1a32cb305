import { defineProject, mergeConfig } from "vitest/config"
import { shared } from "../../vitest.shared.js"

// Browser suites start a server and Chromium: give them room on a shared machine.
export default mergeConfig(shared, defineProject({ test: { name: "dashboard", testTimeout: 120_000, hookTimeout: 120_000 } }))
