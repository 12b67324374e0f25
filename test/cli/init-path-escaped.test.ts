// `portcullis init` names the state directory it sets up (its keyring's path, a mode it changed,
// a keyring already there): a directory whose name holds a newline, an ESC, a C1 CSI and a bidi
// override was printed raw, so the name could clear the screen or forge a line of init's own. It
// is written escaped (safeText), as every other command's failure line is. The real CLI.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { safeText } from "../../src/catalog/text.js";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { passphraseEnv } from "../helpers/state.js";

/** C0 controls but the newline (a line end init writes itself), C1 controls, format characters (bidi) */
const RAW = /(?!\n)[\p{Cc}\p{Cf}]/u;

describe("init and a state directory named with control characters", () => {
  it("names it escaped: the mode it changed, the keyring created, the keyring already there", async () => {
    const dir = join(tempDir(), "state\n\u001b[2J\u009b1m\u202e");
    mkdirSync(dir, { mode: 0o755 });
    const keyring = safeText(join(dir, "keyring.json"));
    const first = await runCli(["init", "--state-dir", dir], { env: passphraseEnv() });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toContain(`the state directory ${safeText(dir)} was mode 755; it is now 700`);
    expect(first.stdout.startsWith(`Keyring created: ${keyring}\n`)).toBe(true);
    const again = await runCli(["init", "--state-dir", dir], { env: passphraseEnv() });
    expect(again.code).toBe(2);
    expect(again.stderr).toContain(`a keyring already exists at ${keyring};`);
    for (const out of [first.stdout, first.stderr, again.stdout, again.stderr]) expect(out).not.toMatch(RAW);
  });
});
