// What a demanding user meets with a wrong word: the refusal names the subcommand it is about
// and the word that is wrong, before anything the store would say.
//  - `catalog show LABEL --revision abc` and `catalog diff LABEL a 2` said "no catalog is recorded
//    under that label" when the label had none, hiding that the revision was no number (and
//    "no state directory" where there was none): the revision words are read before the store is
//    opened, as the other words are.
//  - `audit show 999` was named "portcullis audit:", where `audit show abc` is named
//    "portcullis audit show:".
// Real CLI processes.
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) removeDir(d);
});

describe("refusals named first", () => {
  it("catalog's revision words are refused as such before the label is looked up or the state directory read", async () => {
    const stateDir = newStateDir();
    const nowhere = join(tempDir("portcullis-nowhere-"), "none");
    dirs.push(stateDir, join(nowhere, ".."));
    for (const dir of [stateDir, nowhere]) {
      const show = await runCli(["catalog", "show", "nosuch", "--revision", "abc", "--state-dir", dir]);
      expect(show.stderr).toBe(
        "portcullis catalog show: --revision must be a revision number (1, 2, … as 'catalog list' shows them).\n",
      );
      expect(show.code).toBe(2);
      const diff = await runCli(["catalog", "diff", "nosuch", "a", "2", "--state-dir", dir]);
      expect(diff.stderr).toBe(
        "portcullis catalog diff: FROM must be a revision number (1, 2, … as 'catalog list' shows them).\n",
      );
      expect(diff.code).toBe(2);
    }
  });

  it("audit show of a record past the log's end is named 'audit show'", async () => {
    const stateDir = newStateDir();
    dirs.push(stateDir);
    const r = await runCli(["audit", "show", "999"], { stateDir, env: passphraseEnv(), noTerminal: true });
    expect(r.stderr).toMatch(/^portcullis audit show: there is no record 999 \(the log has \d+\)\.\n$/);
    expect(r.code).toBe(2);
  });
});
