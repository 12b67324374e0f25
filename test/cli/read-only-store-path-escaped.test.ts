// The listing commands read a store they cannot write (a read-only file, a full disk) and say so
// on stderr themselves, naming the store (readWithoutWriting.ts), not through the command line's
// last sentence, which escapes: in a state directory whose name holds a newline, an ESC sequence, a
// C1 CSI or a right-to-left override, the store's path reached the terminal raw (the chmod of its advice
// was quoted already). Escaped now. A read-only store binds only a user who is not root: as root,
// each command runs as `nobody` over a state directory it owns, its store mode 444.
import { chmodSync, cpSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { safeText } from "../../src/catalog/text.js";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { unprivilegedUser } from "../helpers/otherUser.js";
import { newStateDir } from "../helpers/state.js";

/** C0 controls but the newline (a line end the command writes itself), C1 controls, format characters (bidi) */
const RAW = /(?!\n)[\p{Cc}\p{Cf}]/u;

describe("a read-only store in a state directory whose name holds control characters", () => {
  it("each listing command names it escaped", async (ctx) => {
    const parent = tempDir();
    chmodSync(parent, 0o755);
    const stateDir = join(parent, "state-a\n\u001b[2J\u009b1m\u202egnp.");
    cpSync(newStateDir(), stateDir, { recursive: true });
    const user = unprivilegedUser([stateDir]);
    if (!user) return ctx.skip("no user whom file modes bind can run the built CLI here");
    const store = join(stateDir, "portcullis.db");
    chmodSync(store, 0o444);
    for (const args of [
      ["status"],
      ["approvals"],
      ["grants"],
      ["passkey", "list"],
      ["egress"],
      ["vault", "list"],
    ]) {
      const r = await runCli([...args, "--state-dir", stateDir], { ...user.spawn, env: { HOME: stateDir } });
      const what = args.join(" ");
      expect.soft(r.code, `${what}: ${r.stderr}`).toBe(0);
      expect.soft(r.stderr, what).not.toMatch(RAW);
      expect
        .soft(r.stderr, what)
        .toContain(`portcullis ${what}: the store ${safeText(store)} cannot be written`);
    }
  });
});
