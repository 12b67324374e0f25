// A keyring others may read is made 0600 by the command that reads it (keyring-mode.test.ts). One
// this user cannot make 0600 is another user's file (chmod: EPERM), as `sudo cp` of a backup into
// one's own state directory leaves it: root's, mode 644. It was read all the same, with a warning
// whose advice (`chmod 600 FILE`) fails when this user runs it and, run by its owner, locks this
// user out. It is refused now (exit 2), as ssh refuses a private key others may read: an approver
// key and a vault data key every user who can read the file may recover by guessing the
// passphrase guard nothing, and this user cannot close that. The sentence says why and what to
// do, doctor gives the same as its next step, and the file is left as it was.
//
// As root, the commands run as `nobody` in a state directory of its own, with the keyring root's;
// another user cannot give a file away, so the test is skipped there.
import { spawnSync } from "node:child_process";
import { chmodSync, chownSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { CLI, fixtureCommand, NODE } from "../helpers/paths.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

const NOBODY = { uid: 65534, gid: 65534 };
const ROOT = process.platform === "linux" && process.getuid?.() === 0;
const SKIP = !ROOT
  ? "needs root: only root can give this user a keyring another user owns (chown), which is what makes chmod fail"
  : spawnSync(NODE, [CLI, "--version"], { ...NOBODY, encoding: "utf8" }).status !== 0
    ? "the user nobody cannot run the built CLI here (its checkout is not readable)"
    : false;

describe.skipIf(SKIP)("a keyring others may read that this user cannot make 0600", () => {
  it("is refused by every command that reads it, naming its owner and what to do; doctor says the same; nothing changes", async () => {
    const stateDir = newStateDir();
    // nobody's state directory, store and passphrase file; the keyring root's, mode 644
    chmodSync(dirname(stateDir), 0o755);
    for (const f of ["", "portcullis.db"]) chownSync(join(stateDir, f), NOBODY.uid, NOBODY.gid);
    const keyring = join(stateDir, "keyring.json");
    chmodSync(keyring, 0o644);
    const before = readFileSync(keyring, "utf8");
    const env = passphraseEnv();
    chownSync(env.PORTCULLIS_PASSPHRASE_FILE!, NOBODY.uid, NOBODY.gid);
    chmodSync(dirname(env.PORTCULLIS_PASSPHRASE_FILE!), 0o755);

    const sentence = `${keyring} has mode 644: other users who can reach it may read it, and a copy lets them guess at the passphrase offline; this user cannot make it 0600 (it belongs to uid 0, and only its owner may change its mode), so it is not used`;
    const fix = `run portcullis as the user ${keyring} belongs to (ls -l ${keyring} shows who), who makes it theirs alone first (chmod 600 ${keyring}), or set up a state directory of your own (portcullis init --state-dir DIR)`;
    for (const [name, args] of [
      ["vault", ["vault", "list"]],
      ["unlock", ["unlock", "--for", "1m"]],
      ["run", ["run", "--label", "echo", "--", ...fixtureCommand("echo")]],
    ] as const) {
      const r = await runCli([...args], { ...NOBODY, stateDir, env, input: "" });
      expect(r.code, `${name}: ${r.stderr}`).toBe(2);
      expect(r.stderr, name).toContain(sentence);
      expect(r.stderr, name).toContain(fix);
      // the old advice, alone: this user's chmod fails
      expect(r.stderr, name).not.toContain("make it yours alone");
    }

    const doctor = await runCli(["doctor", "--json", "--state-dir", stateDir], { ...NOBODY, env });
    expect(doctor.code, doctor.stderr).toBe(1);
    const findings = (
      JSON.parse(doctor.stdout) as { findings: { ok: boolean; what: string; next: string }[] }
    ).findings;
    expect(findings).toContainEqual(
      expect.objectContaining({ ok: false, what: expect.stringContaining(sentence), next: fix }),
    );

    // left as it was: root's, 644, the same bytes
    const st = statSync(keyring);
    expect([st.uid, st.mode & 0o777]).toEqual([0, 0o644]);
    expect(readFileSync(keyring, "utf8")).toBe(before);
  });
});
