import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { completeLines } from "../helpers/completeLines.js";
import { alive, removeDir, tempDir, waitFor } from "../helpers/files.js";
import { canChoosePids, sleeperUnder } from "../helpers/pids.js";
import { rawGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

it.skipIf(!canChoosePids())(
  "the gateway's end signals no process group that took a crashed server's pid while it was paused",
  async () => {
    const dir = tempDir("pc-pid-reused-");
    cleanup.push(() => removeDir(dir));
    const starts = join(dir, "starts");
    writeFileSync(join(dir, "server.sh"), `echo $$ >> "${starts}"\nexit 1\n`);
    const gw = rawGateway({
      args: ["--label", "reused", "--approval", "none", "--on-change", "restart", "--", "sh", "server.sh"],
      cwd: dir,
      env: { PORTCULLIS_RESPAWN_BACKOFF_MS: "20" },
    });
    cleanup.push(() => gw.close());
    await waitFor(() => /supervision paused/.test(gw.stderr()), 30_000, "the crash loop to pause");
    const pids = completeLines(readFileSync(starts, "utf8")).map(Number);
    const last = pids[pids.length - 1]!;
    await waitFor(() => !existsSync(`/proc/${last}`), 10_000, "the last server to be reaped");
    const other = sleeperUnder(last, (end) => cleanup.push(end));
    expect(other, "a process group under the crashed server's pid").toBe(last);

    gw.closeStdin();
    expect((await gw.exited).code).toBe(0);
    expect(alive(last)).toBe(true);
  },
);
