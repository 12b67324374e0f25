// Several gateways started at the same moment on one fresh state directory all start: the
// store is opened with its busy timeout first and the WAL switch and migrations are retried.
// Real gateways, real processes, one fresh store per round.
import { statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir } from "../helpers/files.js";
import { runCli, type Session, startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("store contention", () => {
  it("eight gateways opening one fresh store at once all start, round after round", async () => {
    for (let round = 0; round < 3; round++) {
      const stateDir = newStateDir();
      cleanup.push(() => removeDir(stateDir));
      const started = await Promise.allSettled(
        Array.from({ length: 8 }, (_, i) =>
          startGateway({
            args: ["--label", `g${i}`, "--approval", "none", "--", ...fixtureCommand("echo")],
            stateDir,
            connectTimeoutMs: 60_000,
          }),
        ),
      );
      const sessions = started.flatMap((s) =>
        s.status === "fulfilled" ? [s.value as Session<unknown>] : [],
      );
      for (const s of sessions) cleanup.push(() => s.close());
      const failures = started.flatMap((s) => (s.status === "rejected" ? [String(s.reason)] : []));
      expect(failures).toEqual([]);
      for (const s of sessions) expect(s.stderr()).not.toMatch(/SQLITE_BUSY|database is locked/);
      const status = await runCli(["status", "--json", "--state-dir", stateDir]);
      expect((JSON.parse(status.stdout) as { gateways: unknown[] }).gateways).toHaveLength(8);
      expect(statSync(join(stateDir, "portcullis.db")).mode & 0o777).toBe(0o600);
      for (const s of sessions) await s.close();
    }
  }, 180_000);
});

describe("read commands on a state directory that does not exist", () => {
  it("exit 2 naming the directory, and create nothing", async () => {
    const missing = join(newStateDir(), "not-here");
    for (const args of [
      ["status"],
      ["status", "--json"],
      ["approvals"],
      ["grants"],
      ["audit", "verify"],
      ["audit", "sessions"],
      ["audit", "activity"],
      ["catalog", "list", "x"],
    ]) {
      const r = await runCli([...args, "--state-dir", missing]);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr).toContain(missing);
      expect(() => statSync(missing)).toThrow();
    }
  });
});
