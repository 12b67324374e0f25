import type { TestSpecification } from "vitest/node";
import { BaseSequencer } from "vitest/node";
import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

/**
 * The files that take longest, longest first (seconds of the last clean run on a 2-core machine).
 * Vitest orders files by their last recorded duration, but a fresh clone has no record and it falls back
 * to file size: the conformance file (a few lines that drive a long suite) then started last and
 * ran alone for its last 65 s. Started first, the long files overlap the short ones. A stale entry
 * only changes the order, never what runs.
 */
const LONGEST_FIRST = [
  "test/gateway/lifecycle.test.ts", // 76
  "test/util/redact-unoptimized.test.ts", // 64
  "test/conformance/conformance.test.ts", // 63
  "test/console/browser.test.ts", // 45
  "test/store/held-lock.test.ts", // 44
  "test/onboard/drill.test.ts", // 42
  "test/gateway/client-habits.test.ts", // 37
  "test/vault/vault.test.ts", // 36
  "test/gateway/races.property.test.ts", // 35
  "test/console/cli.test.ts", // 34
  "test/http/upstream-fixture.test.ts", // 34
  "test/gateway/listen-resources.test.ts", // 34
  "test/vault/egress-window.test.ts", // 30
  "test/gateway/unoptimized-regex.test.ts", // 29
  "test/onboard/wrap.test.ts", // 28
  "test/gateway/unsigned-columns.test.ts", // 28
];

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification) => {
      const i = LONGEST_FIRST.findIndex((name) => f.moduleId.endsWith(name));
      return i === -1 ? LONGEST_FIRST.length : i;
    };
    return sorted.sort((a, b) => rank(a) - rank(b)); // stable: the rest keep vitest's order
  }
}

// Tests drive real processes over real pipes: give them room, and run files in
// parallel only as far as the machine has cores.
//
// `isolate: false`: each worker runs its files one after another with the modules it loaded
// kept, instead of a fresh process per file. The suite is bound by CPU on a 2-core machine, and a
// fresh process per file paid node's start and the imports again (both MCP SDKs, zod, the
// sources under test): about 15 % of the suite's CPU (measured on the whole suite, same machine,
// same day: 17.3 min of CPU against 20.2). What a file could leave behind in a worker is undone
// after each file by test/setup/perFile.ts (the environment, the helpers' temporary
// directories); no test mocks modules or timers.
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/globalSetup.ts"],
    setupFiles: ["test/setup/perFile.ts"],
    isolate: false,
    // The cheap key derivation for keyrings made in the test processes and their children (set
    // for the whole suite, not by whichever helper a worker happened to load first).
    env: { PORTCULLIS_INSECURE_TEST_KDF: "1" },
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // two at least (a file waiting on a process leaves its core to the other), more where there are
    maxWorkers: Math.max(2, availableParallelism()),
    sequence: { sequencer: LongestFirst },
  },
});
