// `unlock --for`: every duration it refuses, malformed or out of range, gets one sentence that
// gives the range and the form, exit 2, before the passphrase is asked for. Real CLI processes.
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

const SENTENCE =
  "portcullis unlock: --for takes a duration more than 0 and at most 24h, such as 90s, 10m, 2h or 1h30m.\n";

describe("unlock --for", () => {
  it("0, 0s, 0h0m0s, 25h, 24h0m1s and malformed ones are one sentence with the range, exit 2", async () => {
    const stateDir = newStateDir();
    for (const d of ["0", "0s", "0h0m0s", "25h", "24h0m1s", "ten", "1d"]) {
      const r = await runCli(["unlock", "--for", d], { stateDir, env: passphraseEnv() });
      expect(r.code, d).toBe(2);
      expect(r.stderr, d).toBe(SENTENCE);
    }
    const ok = await runCli(["unlock", "--for", "24h"], { stateDir, env: passphraseEnv() });
    expect(ok.code, ok.stderr).toBe(0);
    expect((await runCli(["lock"], { stateDir })).code).toBe(0);
  });

  it("a duration given without --for (unlock 10m) is refused saying a duration goes with --for, the word not shown; nothing is unlocked", async () => {
    // it was "unexpected argument (1, not shown …)" alone: the user was left to guess the flag
    const stateDir = newStateDir();
    for (const words of [["10m"], ["2h", "hunter2-pass"], ["--help", "10m"]]) {
      const r = await runCli(["unlock", ...words], { stateDir, env: passphraseEnv() });
      expect(r.stderr, words.join(" ")).toBe(
        `portcullis unlock: unexpected argument${words.length === 2 && words[0] !== "--help" ? "s (2" : " (1"}, not shown: a passphrase or a secret is never given on the command line); a duration is given with --for (portcullis unlock --for 10m), and the passphrase is typed when asked.\n`,
      );
      expect(r.code, words.join(" ")).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr).not.toContain("hunter2");
    }
    expect((await runCli(["lock"], { stateDir })).stdout).toBe("the vault was already locked\n");
  });
});
