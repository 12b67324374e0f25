import { defineConfig } from "vitest/config";

// Tests drive real processes over real pipes: give them room, and run files in
// parallel only as far as the machine has cores.
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/globalSetup.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    maxWorkers: 2,
  },
});
