// Shared tsup settings: ESM + .d.ts, dependencies stay external (tsup's default).
/** @param {string[]} entry @returns {import("tsup").Options} */
export const libraryConfig = (entry) => ({
  entry,
  format: ["esm"],
  dts: true,
  target: "node20",
  platform: "node",
  clean: true,
  sourcemap: true,
  splitting: true,
  treeshake: true
})
