// `init` ends with what comes next: the doctor that lists the host files' servers and what to run
// for them, and the wrap dry run, each with the state directory init made when it is not the
// default (a bare command would look in another directory and find no keyring).
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { passphraseEnv } from "../helpers/state.js";

describe("init says what to do next", () => {
  it("its last line names doctor and wrap --dry-run with its --state-dir, and that doctor runs as given", async () => {
    const root = tempDir("portcullis-init-next-");
    try {
      const stateDir = join(root, "state");
      const home = join(root, "home");
      const init = await runCli(["init", "--state-dir", stateDir], {
        env: { ...passphraseEnv(), HOME: home },
        cwd: root,
      });
      expect(init.code, init.stderr).toBe(0);
      const lines = init.stdout.trimEnd().split("\n");
      expect(lines.at(-1)).toBe(
        `next: 'portcullis doctor --state-dir ${stateDir}' lists the servers of your MCP hosts' files and what to run to put them behind portcullis ('portcullis wrap HOST --dry-run --state-dir ${stateDir}' first)`,
      );
      const doctor = await runCli(["doctor", "--state-dir", stateDir], { env: { HOME: home }, cwd: root });
      expect(doctor.code, doctor.stdout + doctor.stderr).toBe(0);
      expect(doctor.stdout).toContain("keyring          present");
    } finally {
      removeDir(root);
    }
  });
});
