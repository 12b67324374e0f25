// `audit sessions` says who ran each run, in the text as in --json: the process chain run_started
// recorded, shown as the approval review shows who asks (the host's executable, pid and command).
// The text had epochs, revisions, grants and calls, and nothing of the agent that made them.
import { basename } from "node:path";
import { describe, expect, it } from "vitest";
import { removeDir } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

interface Agent {
  pid: number;
  executable: string | null;
}

describe("audit sessions: the agent of each run", () => {
  it("is in the text, the same process --json names", async () => {
    const stateDir = newStateDir();
    try {
      const gw = await startGateway({
        args: ["--label", "who", "--approval", "none", "--", ...fixtureCommand("echo")],
        stateDir,
      });
      await gw.client.callTool({ name: "echo", arguments: { message: "hi" } });
      await gw.close();

      const json = await runCli(["audit", "sessions", "--json", "--state-dir", stateDir], {
        env: passphraseEnv(),
      });
      expect(json.code, json.stderr).toBe(0);
      const [run] = JSON.parse(json.stdout) as { agent: Agent[] }[];
      // this test's own process launched the gateway: the first of the chain
      const launcher = run!.agent[0]!;
      expect(launcher.pid).toBe(process.pid);

      const text = await runCli(["audit", "sessions", "--state-dir", stateDir], { env: passphraseEnv() });
      expect(text.code, text.stderr).toBe(0);
      const line = text.stdout.split("\n").find((l) => l.startsWith("  agent "));
      expect(line).toBeDefined();
      expect(
        line!.startsWith(`  agent      ${basename(launcher.executable ?? "")} (pid ${launcher.pid})`),
      ).toBe(true);
    } finally {
      removeDir(stateDir);
    }
  });
});
