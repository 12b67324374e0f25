// `vault set NAME --host HOST` made the local CA for HTTP delivery and named its file on stdout
// raw: in a state directory whose name holds a newline, an ESC, a C1 CSI or a right-to-left
// override, those reached the terminal as they were. Escaped now, as init names that directory
// (init-path-escaped.test.ts) and every failure names it. The real CLI, over pipes.
import { cpSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { safeText } from "../../src/catalog/text.js";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

/** C0 controls but the newline (a line end the command writes itself), C1 controls, format characters (bidi) */
const RAW = /(?!\n)[\p{Cc}\p{Cf}]/u;

describe("vault set's line naming the CA it made", () => {
  it("names the file escaped", async () => {
    const stateDir = join(tempDir(), "state-a\n\u001b[2J\u009b1m\u202egnp.");
    cpSync(newStateDir(), stateDir, { recursive: true });
    const r = await runCli(["vault", "set", "API_KEY", "--host", "api.example.com", "--from-stdin"], {
      stateDir,
      env: passphraseEnv(),
      input: "a-value-long-enough\n",
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).not.toMatch(RAW);
    expect(r.stdout).toContain(
      `created the local CA servers will trust for HTTP delivery: ${safeText(join(stateDir, "egress-ca.pem"))}\n`,
    );
  });
});
