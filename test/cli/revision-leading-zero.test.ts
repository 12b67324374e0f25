// A revision or record number written with a leading zero (`01`) is refused as every numeric flag
// refuses one (`--port 08080`, `--for 010`: leadingZero in args.ts), naming what was written so,
// rather than with the sentence for a value that is no number at all. Real CLI processes against
// a store holding two catalog revisions recorded as a gateway records them.
import { describe, expect, it } from "vitest";
import { recordRevision, snapshotOf, type Tool } from "../../src/catalog/index.js";
import { openStore } from "../../src/store/db.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";

const tool = (description: string): Tool => ({
  name: "lookup",
  description,
  inputSchema: { type: "object", properties: {} },
});

function stateWithTwoRevisions(): string {
  const stateDir = newStateDir();
  const db = openStore(stateDir);
  recordRevision(db, "inv", snapshotOf([tool("Looks up.")], 1), null);
  recordRevision(db, "inv", snapshotOf([tool("Looks up, faster.")], 1), null);
  db.close();
  return stateDir;
}

describe("a number written with a leading zero", () => {
  it("is refused by catalog show --revision and catalog diff FROM TO, naming the one so written", async () => {
    const stateDir = stateWithTwoRevisions();
    const refused = async (args: string[], said: string) => {
      const r = await runCli(["catalog", ...args], { stateDir });
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stdout, args.join(" ")).toBe("");
      expect(r.stderr, args.join(" ")).toBe(`${said}\n`);
    };
    await refused(
      ["show", "inv", "--revision", "01"],
      "portcullis catalog show: --revision is written with a leading zero; write the number without it.",
    );
    await refused(
      ["diff", "inv", "01", "2"],
      "portcullis catalog diff: FROM is written with a leading zero; write the number without it.",
    );
    await refused(
      ["diff", "inv", "1", "002"],
      "portcullis catalog diff: TO is written with a leading zero; write the number without it.",
    );
    // the same numbers written plainly are read
    const shown = await runCli(["catalog", "show", "inv", "--revision", "1"], { stateDir });
    expect(shown.code, shown.stderr).toBe(0);
    const diffed = await runCli(["catalog", "diff", "inv", "1", "2"], { stateDir });
    expect(diffed.code, diffed.stderr).toBe(0);
  });

  it("is refused by audit show SEQ, as a number, not as no number", async () => {
    const stateDir = newStateDir();
    for (const seq of ["01", "00"]) {
      const r = await runCli(["audit", "show", seq], { stateDir });
      expect(r.code, seq).toBe(2);
      expect(r.stderr, seq).toBe(
        "portcullis audit show: SEQ is written with a leading zero; write the number without it.\n",
      );
    }
    // a number that is none is still refused with the sentence for it
    const none = await runCli(["audit", "show", "x"], { stateDir });
    expect(none.stderr).toBe("portcullis audit show: takes one record number (SEQ ≥ 1).\n");
  });
});
