// `unlock` of a vault with nothing stored said "(0 secrets)" and no more: the human who unlocked
// it for a server learnt neither that nothing would be released nor how to store a value. It now
// says how to add one, with the state directory flag as the other hints give it; a vault with a
// secret gets no such line. The real CLI.
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

let locks: string[] = [];
afterEach(async () => {
  for (const stateDir of locks) await runCli(["lock"], { stateDir });
  locks = [];
});

const unlock = (stateDir: string) => {
  locks.push(stateDir);
  return runCli(["unlock"], { stateDir, env: passphraseEnv() });
};

describe("unlock of an empty vault", () => {
  it("says how to add a secret, naming the state directory; not once one is stored", async () => {
    const stateDir = newStateDir();
    const empty = await unlock(stateDir);
    expect(empty.code, empty.stderr).toBe(0);
    expect(empty.stdout).toContain("(0 secrets)");
    expect(empty.stdout).toContain(
      `no secret stored; add one with 'portcullis vault set NAME --host HOST --state-dir ${stateDir}' (or --deliver env): the unlocked vault holds it at once\n`,
    );

    const set = await runCli(["vault", "set", "api-key", "--host", "api.example.com", "--from-stdin"], {
      stateDir,
      env: passphraseEnv(),
      input: "a-value-long-enough\n",
    });
    expect(set.code, set.stderr).toBe(0);
    const one = await unlock(stateDir);
    expect(one.code, one.stderr).toBe(0);
    expect(one.stdout).toContain("(1 secret)");
    expect(one.stdout).not.toContain("no secret stored");
  });
});
