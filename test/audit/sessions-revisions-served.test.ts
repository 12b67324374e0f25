// `audit sessions` writes each catalog revision a run was served once, with how many times: a
// client lists tools again and again (each turn, after list_changed), and the same revision written
// out once per listing ("1 (epoch E), 1 (epoch E), 1 (epoch E)") read as so many revisions.
// `--json` keeps every listing with its time.
import { describe, expect, it } from "vitest";
import { removeDir } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

describe("audit sessions: a revision served several times", () => {
  it("is written once with its count in the text, and every listing is kept in --json", async () => {
    const stateDir = newStateDir();
    try {
      const gw = await startGateway({
        args: ["--label", "lists", "--approval", "none", "--", ...fixtureCommand("echo")],
        stateDir,
      });
      for (let i = 0; i < 3; i++) await gw.client.listTools();
      await gw.client.callTool({ name: "echo", arguments: { message: "hi" } });
      await gw.close();

      const json = await runCli(["audit", "sessions", "--json", "--state-dir", stateDir], {
        env: passphraseEnv(),
      });
      expect(json.code, json.stderr).toBe(0);
      const [run] = JSON.parse(json.stdout) as {
        epochs: string[];
        revisions: { revision: number; epoch: string }[];
      }[];
      expect(run!.epochs).toHaveLength(1);
      const epoch = run!.epochs[0]!;
      expect(run!.revisions).toHaveLength(3);
      expect(run!.revisions.every((r) => r.revision === 1 && r.epoch === epoch)).toBe(true);

      const text = await runCli(["audit", "sessions", "--state-dir", stateDir], { env: passphraseEnv() });
      expect(text.code, text.stderr).toBe(0);
      expect(text.stdout).toContain(`\n  revisions  1 (epoch ${epoch}, served 3 times)\n`);
    } finally {
      removeDir(stateDir);
    }
  });
});
