// A name or id typed on the command line that names nothing is the user's input to fix: exit 2,
// one sentence naming it, from every command (README, "Commands"). `vault rm` said it with exit 1,
// the code of a check that failed, while `passkey rm`, `revoke`, `approve`, `deny`, `audit show`,
// `catalog` and `egress` said exit 2: a script could not tell "no such thing" by its code. A thing
// that exists but is no longer in the state asked for (a grant already revoked) stays exit 1.
// The real CLI, with no terminal: a name that is not there is said before any passphrase.
import { describe, expect, it } from "vitest";
import { removeDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";

describe("a name or id that names nothing", () => {
  it("is exit 2 with one sentence naming it, from every command that takes one", async () => {
    const stateDir = newStateDir();
    try {
      // the store is made by the first command that writes (passkey list reads; vault list opens it)
      expect((await runCli(["vault", "list"], { stateDir })).code).toBe(0);
      const id = "01M8Z1VBWG8Q99D6CRYJE0396A";
      const cases: [string[], string][] = [
        [["vault", "rm", "api-stagign"], "there is no secret named api-stagign"],
        [["passkey", "rm", "nosuch"], "there is no passkey with that ID"],
        [["revoke", id], `there is no grant ${id}`],
        [["approve", id], `there is no approval request ${id}`],
        [["deny", id], `there is no approval request ${id}`],
        [["audit", "show", "999"], "there is no record 999"],
        [["catalog", "show", "nosuch"], 'no catalog recorded for "nosuch"'],
        [["egress", "nosuch"], 'no server "nosuch" has run'],
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
});
