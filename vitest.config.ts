import type { TestSpecification } from "vitest/node";
import { BaseSequencer } from "vitest/node";
import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

/**
 * The files that take longest, longest first (seconds of a whole run on a 2-core machine, 4 workers).
 * Vitest orders files by their last recorded duration, but a fresh clone has no record and it falls back
 * to file size: the conformance file (a few lines that drive a long suite) then started last and
 * ran alone for its last 65 s. Started first, the long files overlap the short ones. A stale entry
 * only changes the order, never what runs.
 */
const LONGEST_FIRST = [
  "test/conformance/conformance.test.ts", // 45
  "test/console/browser.test.ts", // 49 before its cases shared one shop (about 15 % less since)
  "test/gateway/lifecycle.test.ts", // 37 (estimated)
  "test/util/redact-unoptimized.test.ts", // 27 (estimated: 54 before its runs went from 8 to 5 MiB)
  "test/store/held-lock.test.ts", // 26 (estimated)
  "test/gateway/deaf-server-bounds.test.ts", // 28 (five floods of 40-128 MiB, one after another)
  "test/gateway/client-habits.test.ts", // 20
  "test/onboard/drill.test.ts", // 19
  "test/gateway/races.property.test.ts", // 19
  "test/http/upstream-fixture.test.ts", // 19
  "test/audit/cli.test.ts", // 18
  "test/gateway/unsigned-columns.test.ts", // 17
  "test/gateway/approvals.test.ts", // 17
  "test/gateway/listen-resources.test.ts", // 16 (estimated)
  "test/approval/forged-decisions-shown.test.ts", // 14 (estimated)
  "test/gateway/hostile-exhaustion.test.ts", // 12 (estimated)
  "test/identity/watch.test.ts", // 11 (estimated: 19 before its sleeps became waits on the watcher's reports)
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

// Tests drive real processes over real pipes: give them room (the timeouts below), and run a few
// more files at once than a small machine has cores (maxWorkers below says why).
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
    // Four at least: much of a test file's time is spent waiting (for a timeout, a debounce, a
    // process to start or end), during which its core serves another file. Measured on the whole
    // suite, 2 cores, same hour: 2 workers 765 s, 3 workers 552 s (the cores 77 % busy), 4
    // workers 488 s (89 %); all green. More than that only where there are more cores.
    maxWorkers: Math.max(4, availableParallelism()),
    sequence: { sequencer: LongestFirst },
  },
});
