// @ts-check
import js from "@eslint/js"
import tseslint from "typescript-eslint"

export default tseslint.config(
  { ignores: ["**/dist/**", "**/node_modules/**", "**/coverage/**", "bench/.results/**", "bench/.build/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2022, sourceType: "module" },
    rules: {
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/no-namespace": "off",
      "@typescript-eslint/no-empty-object-type": "off",
      "no-console": "off"
    }
  },
  // The core is pure: it talks to the world only through its service interfaces. Its folders
  // depend one way, domain <- ports <- usecases <- dispatch, with the wiring (UseCases.ts,
  // Embedded.ts, index.ts) and the conformance suite (testing/) above them all.
  ...coreRules()
)

/** One rule set per core folder: `effect` and core's own modules only, nothing from a folder above. */
function coreRules() {
  const pure = { regex: "^(?!effect(/|$)|\\.)", message: "@wes/core may import `effect` and its own modules only." }
  const globals = ["error", "process", "Buffer", "require", "setTimeout", "setInterval"]
  const layers = ["domain", "ports", "usecases", "dispatch"]
  const all = { files: ["packages/core/src/**/*.ts"], rules: { "no-restricted-imports": ["error", { patterns: [pure] }], "no-restricted-globals": globals } }
  return [all, ...layers.map((layer, i) => {
    const above = [...layers.slice(i + 1), "testing"]
    const upward = {
      regex: `^\\.\\.?/(\\.\\./)*((${above.join("|")})/|(UseCases|Embedded|index|testing)\\.js$)`,
      message: `core/src/${layer}/ depends on ${layers.slice(0, i).join(", ") || "nothing but itself"}${i > 0 ? " and itself" : ""}: ` +
        `move what it needs down, or put the code in the folder above (docs/architecture.md).`
    }
    return { files: [`packages/core/src/${layer}/**/*.ts`], rules: { "no-restricted-imports": ["error", { patterns: [pure, upward] }], "no-restricted-globals": globals } }
  })]
}
