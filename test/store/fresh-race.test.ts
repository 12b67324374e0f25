// Gateways started at the same instant on a state directory that holds a keyring and no store
// yet (an `init` interrupted before it made its store, or a store moved aside): each must start,
// the store is made once (its schema brought up by one of them, the others waiting for it), and
// their calls land in one linear chain that verifies. test/store/contention.test.ts races
// gateways over a store `init` made; this races them over its creation.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir } from "../helpers/files.js";
import { runCli, type Session, startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newKeyringOnlyStateDir } from "../helpers/state.js";

type Client = Session<import("@modelcontextprotocol/sdk/client/index.js").Client>;

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("gateways started at once on a state directory with no store yet", () => {
  it("all start, make the store once, and record their calls in one chain that verifies", async () => {
    for (let round = 0; round < 2; round++) {
      const stateDir = newKeyringOnlyStateDir();
      cleanup.push(() => removeDir(stateDir));
      expect(existsSync(join(stateDir, "portcullis.db"))).toBe(false);
      const started = await Promise.allSettled(
        Array.from({ length: 4 }, (_, i) =>
          startGateway({
            args: ["--label", `g${i}`, "--approval", "none", "--", ...fixtureCommand("echo")],
            stateDir,
            connectTimeoutMs: 60_000,
          }),
        ),
      );
      const sessions = started.flatMap((s) => (s.status === "fulfilled" ? [s.value as Client] : []));
      for (const s of sessions) cleanup.push(() => s.close());
      expect(started.flatMap((s) => (s.status === "rejected" ? [String(s.reason)] : []))).toEqual([]);
      const answers = await Promise.all(
        sessions.flatMap((s, i) =>
          [0, 1].map((n) =>
            s.client.callTool({ name: "echo", arguments: { message: `g${i} ${n}` } }, undefined, {
              timeout: 60_000,
            }),
          ),
        ),
      );
      expect(answers.filter((a) => a.isError)).toEqual([]);
      for (const s of sessions) await s.close();
      const verify = await runCli(["audit", "verify", "--json", "--state-dir", stateDir]);
      expect(verify.code, verify.stdout + verify.stderr).toBe(0);
      const activity = await runCli(["audit", "export", "--state-dir", stateDir]);
      const types = activity.stdout
        .trim()
        .split("\n")
        .map((l) => (JSON.parse(l) as { header: { type: string } }).header.type);
      expect(types.filter((t) => t === "tool_called")).toHaveLength(8);
      expect(types.filter((t) => t === "tool_result")).toHaveLength(8);
    }
  }, 120_000);
});
