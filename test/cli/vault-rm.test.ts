// `vault rm NAME` for a name the vault does not hold says so before it asks for the passphrase:
// secret names are stored in clear (`vault list` shows them without it), so nobody types a
// passphrase to learn of a typo. Removing a secret that is there still takes the passphrase. The
// real CLI, with no terminal to ask on.
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

describe("vault rm", () => {
  it("a name the vault does not hold: exit 2 at once (the input to fix), no passphrase asked; one it holds still needs it", async () => {
    const stateDir = newStateDir();
    const env = passphraseEnv();
    const set = await runCli(["vault", "set", "api-staging", "--from-stdin", "--deliver", "env"], {
      stateDir,
      env,
      input: "s3cr3t-value-for-the-test\n",
    });
    expect(set.code, set.stderr).toBe(0);

    // no terminal and no passphrase file: asking would be exit 2 ("no terminal to read the passphrase from")
    const typo = await runCli(["vault", "rm", "api-stagign"], { stateDir, noTerminal: true });
    expect(typo.stderr).toBe(
      "portcullis vault rm: there is no secret by that name (the name given is not repeated, in case it is a secret typed in the wrong place); stored: api-staging.\n",
    );
    expect(typo.code).toBe(2);

    const held = await runCli(["vault", "rm", "api-staging"], { stateDir, noTerminal: true });
    expect(held.code).toBe(2);
    expect(held.stderr).toMatch(/no terminal to read the passphrase from/);
    const removed = await runCli(["vault", "rm", "api-staging"], { stateDir, env });
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toBe("secret api-staging removed\n");
  });
});
