// A name or id typed on the command line that names nothing is the user's input to fix: exit 2,
// one sentence naming it, from every command (README, "Commands"). `vault rm` said it with exit 1,
// the code of a check that failed, while `passkey rm`, `revoke`, `approve`, `deny`, `audit show`,
// `catalog` and `egress` said exit 2: a script could not tell "no such thing" by its code. A thing
// that exists but is no longer in the state asked for (a grant already revoked) stays exit 1.
// The real CLI, with no terminal: a name that is not there is said before any passphrase. A name
// that names nothing is not repeated (a token pasted where a name belongs looks like a name):
// the sentence names what exists here instead.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

describe("a name or id that names nothing", () => {
  it("is exit 2 with one sentence naming it, from every command that takes one", async () => {
    const stateDir = newStateDir();
    try {
      // the store is made by the first command that writes (passkey list reads; vault list opens it)
      expect((await runCli(["vault", "list"], { stateDir })).code).toBe(0);
      const id = "01M8Z1VBWG8Q99D6CRYJE0396A";
      const cases: [string[], string][] = [
        [["vault", "rm", "api-stagign"], "there is no secret by that name"],
        [
          ["passkey", "rm", "nosuch"],
          // the list to look in, in this state directory (PORTCULLIS_HOME here), not the default's
          `there is no passkey with that ID (not shown, in case it is something else typed in its place); 'portcullis passkey list --state-dir ${stateDir}' shows them`,
        ],
        // with the list to look in, in this state directory
        [
          ["revoke", id],
          `there is no grant ${id}; 'portcullis grants --state-dir ${stateDir}' lists the active ones.`,
        ],
        [
          ["approve", id],
          `there is no approval request ${id}; 'portcullis approvals --state-dir ${stateDir}' lists the pending ones.`,
        ],
        [
          ["deny", id],
          `there is no approval request ${id}; 'portcullis approvals --state-dir ${stateDir}' lists the pending ones.`,
        ],
        [["audit", "show", "999"], "there is no record 999"],
        [["catalog", "show", "nosuch"], "no catalog is recorded under that label"],
        [["egress", "nosuch"], "no server has run under that label"],
      ];
      for (const [args, said] of cases) {
        const r = await runCli(args, { stateDir, noTerminal: true });
        expect(r.stderr, args.join(" ")).toContain(said);
        expect(r.stderr.trim().split("\n"), args.join(" ")).toHaveLength(1);
        expect(r.code, args.join(" ")).toBe(2);
      }
    } finally {
      removeDir(stateDir);
    }
  });

  it("a token given where a secret's name or a label belongs is never repeated; what exists is named", async () => {
    const stateDir = newStateDir();
    try {
      const set = await runCli(["vault", "set", "api-staging", "--from-stdin", "--deliver", "env"], {
        stateDir,
        env: passphraseEnv(),
        input: "value-of-the-test",
      });
      expect(set.code, set.stderr).toBe(0);
      const token = "sk-live-4eC39HqLyjWDarjtT1zdp7dc";
      const cases: [string[], string][] = [
        [["vault", "rm", token], "stored: api-staging."],
        [["catalog", "show", token], "none is recorded yet."],
        [["catalog", "list", token], "none is recorded yet."],
        [["egress", token], "none has run yet."],
        [["wrap", token], "nor an existing file"],
        [["drill", token], "no server by that label"],
        [["run", token], "no server by that label"],
      ];
      const cwd = tempDir("portcullis-not-found-");
      writeFileSync(join(cwd, "portcullis.json"), JSON.stringify({ servers: { inv: { command: "node" } } }));
      for (const [args, said] of cases) {
        const r = await runCli(args, { stateDir, cwd, noTerminal: true });
        expect(r.code, args.join(" ")).toBe(2);
        expect(r.stdout + r.stderr, args.join(" ")).not.toContain(token.slice(0, 12));
        expect(r.stderr, args.join(" ")).toContain(said);
      }
      const run = await runCli(["run", token], { stateDir, cwd, noTerminal: true });
      expect(run.stderr).toContain("known: inv");
      removeDir(cwd);
    } finally {
      removeDir(stateDir);
    }
  });
});
