// A passphrase-like option (`--passphrase X`) or a word after the GRANT given to revoke, grants or
// approvals was refused with "type it when asked, on the terminal": none of the three ever asks
// (revoking only takes authority away; the lists only read). Each says it asks for none; approve
// and deny, which ask, keep the advice to type it when asked. The real CLI.
import { afterEach, describe, expect, it } from "vitest";
import { removeDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) removeDir(d);
});

const WHY =
  "the passphrase is never accepted on the command line (other processes, and the agent, could read it there)";
const GRANT = "01M95GYS1Q2PM811SG8AHB299F";

describe("the passphrase given on the command line", () => {
  it("revoke, grants and approvals say they ask for none; approve and deny say to type it when asked", async () => {
    const stateDir = newStateDir();
    dirs.push(stateDir);
    const cases: [string[], string][] = [
      [
        ["revoke", GRANT, "hunter2-pass"],
        `revoke: unexpected argument after the GRANT; ${WHY}; revoke asks for none (revoking only takes authority away).`,
      ],
      [
        ["revoke", GRANT, "--passphrase", "hunter2-pass"],
        `revoke: ${WHY}; revoke asks for none (revoking only takes authority away).`,
      ],
      [["grants", "--password=hunter2-pass"], `grants: ${WHY}; grants asks for none (it only reads).`],
      [["approvals", "--pin", "1234"], `approvals: ${WHY}; approvals asks for none (it only reads).`],
      [
        ["approve", GRANT, "hunter2-pass"],
        `approve: unexpected argument after the request ID; ${WHY}; type it when asked, on the terminal.`,
      ],
      [["deny", "--passphrase", "hunter2-pass"], `deny: ${WHY}; type it when asked, on the terminal.`],
    ];
    for (const [args, said] of cases) {
      const r = await runCli(args, { stateDir, input: "" });
      expect(r.stderr, args.join(" ")).toBe(`portcullis ${said}\n`);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stdout + r.stderr).not.toContain("hunter2");
    }
  });
});
