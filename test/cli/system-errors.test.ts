// A file or a port the user named that cannot be used is said in words, naming it and what to
// do, with the system's code only as a suffix: `cannot read X: ENOENT` asked the user to know
// errno. The real CLI; (this suite may run as root, where a file's mode binds nobody: the cases
// are ones that hold for every user).
import { once } from "node:events";
import { createServer } from "node:net";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

const MISSING = "it does not exist; check the path (ENOENT)";
const A_DIRECTORY = "it is a directory, not a file (EISDIR)";

describe("a file or port that cannot be used", () => {
  it("is said in words with the code as a suffix: audit --file and --checkpoint, the passphrase file, --config", async () => {
    const stateDir = newStateDir();
    const dir = tempDir();
    const missing = join(dir, "nope.jsonl");
    const said = async (args: string[], env: Record<string, string> = {}) => {
      const r = await runCli(args, { stateDir, env });
      expect(r.code, r.stderr).toBe(2);
      return r.stderr;
    };
    expect(await said(["audit", "verify", "--file", missing])).toBe(
      `portcullis audit verify: cannot read ${missing}: ${MISSING}.\n`,
    );
    expect(await said(["audit", "verify", "--file", dir])).toBe(
      `portcullis audit verify: cannot read ${dir}: ${A_DIRECTORY}.\n`,
    );
    expect(await said(["audit", "verify", "--checkpoint", missing])).toBe(
      `portcullis audit verify: cannot read the checkpoint ${missing}: ${MISSING}.\n`,
    );
    expect(await said(["unlock"], { ...passphraseEnv(), PORTCULLIS_PASSPHRASE_FILE: missing })).toContain(
      `cannot read PORTCULLIS_PASSPHRASE_FILE (${missing}): ${MISSING}.\n`,
    );
    const config = join(dir, "in", "portcullis.json");
    expect(await said(["run", "--config", join(dir, "in", "portcullis.json"), "inv"])).toBe(
      `portcullis run: ${config}: cannot be read: ${MISSING}.\n`,
    );
  });

  it("run --listen on a port another program holds: said in words, with what to do", async () => {
    const holder = createServer().listen(0, "127.0.0.1");
    await once(holder, "listening");
    const port = (holder.address() as { port: number }).port;
    try {
      const r = await runCli(
        ["run", "--label", "x", "--listen", `127.0.0.1:${port}`, "--", "node", "-e", "1"],
        {
          stateDir: newStateDir(),
        },
      );
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain(
        `portcullis run: --listen 127.0.0.1:${port}: cannot listen there: another program listens on that port; stop it or choose another port (EADDRINUSE).\n`,
      );
    } finally {
      holder.close();
    }
  });
});
