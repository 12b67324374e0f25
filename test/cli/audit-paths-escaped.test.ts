// audit writes its own failures (not through the command line's last sentence, which escapes):
// a path holding a newline, an ESC, a C1 CSI or a right-to-left override reached the terminal raw
// from `audit sessions` over a damaged keyring in such a state directory, `audit verify
// --checkpoint` and `audit verify --file` (the export's problem, on stdout). Each is escaped now,
// as every other command's paths are (config-paths-escaped.test.ts). The real CLI, over pipes.
import { cpSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { safeText } from "../../src/catalog/text.js";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

/** C0 controls but the newline (a line end the command writes itself), C1 controls, format characters (bidi) */
const RAW = /(?!\n)[\p{Cc}\p{Cf}]/u;
const HOSTILE = "a\n\u001b[2J\u009b1m\u202egnp.";

describe("audit's own sentences name paths escaped", () => {
  it("a damaged keyring in a state directory whose name holds control characters", async () => {
    const stateDir = join(tempDir(), `state-${HOSTILE}`);
    cpSync(newStateDir(), stateDir, { recursive: true });
    const keyring = join(stateDir, "keyring.json");
    writeFileSync(keyring, "{}\n");
    for (const sub of ["sessions", "activity"]) {
      const r = await runCli(["audit", sub, "--state-dir", stateDir], { env: passphraseEnv() });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).not.toMatch(RAW);
      expect(r.stderr).toContain(`portcullis audit ${sub}: ${safeText(keyring)} is not a usable keyring`);
    }
  });

  it("verify's --file and --checkpoint", async () => {
    const file = join(tempDir(), `export-${HOSTILE}`);
    writeFileSync(file, "not an export\n");
    const verify = await runCli(["audit", "verify", "--file", file]);
    expect(verify.code, verify.stderr).toBe(1);
    expect(verify.stdout).not.toMatch(RAW);
    expect(verify.stdout).toContain(`${safeText(file)} does not read as an audit export`);

    const checkpoint = await runCli(["audit", "verify", "--checkpoint", file], { stateDir: newStateDir() });
    expect(checkpoint.code).toBe(2);
    expect(checkpoint.stderr).not.toMatch(RAW);
    expect(checkpoint.stderr).toContain(`portcullis audit verify: ${safeText(file)}`);
  });
});
