// A command refused by a store or a keyring that cannot be used says, in the same sentence, what
// to do: the store's sentence ends with the one thing doctor advises for its cause; a keyring that
// cannot be read points to doctor for its state directory (doctor tells a damaged file from one
// this user may not read). Before, each named the file and stopped there. Real CLI processes.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { commandNamed } from "../helpers/commandNamed.js";
import { removeDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

let dirs: string[] = [];
afterEach(() => {
  for (const d of dirs) removeDir(d);
  dirs = [];
});

describe("what to do, said where the refusal is", () => {
  it("a store that is not one: the commands say to restore it or move it aside", async () => {
    const stateDir = newStateDir();
    dirs.push(stateDir);
    const db = join(stateDir, "portcullis.db");
    writeFileSync(db, Buffer.alloc(4096, 7));
    for (const args of [["status"], ["grants", "--json"], ["vault", "list"]]) {
      const r = await runCli(args, { stateDir });
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr, args.join(" ")).toBe(
        `portcullis ${commandNamed(args)}: the store ${db} is not a portcullis store (not an SQLite database, or its header is damaged). To fix it: restore ${db} from a backup of the state directory; without one, move it aside and keep it (mv ${db} ${db}.damaged): the next command creates a new, empty store and audit log.\n`,
      );
    }
  });

  it("a keyring that is not JSON: unlock, audit, vault set and run point to doctor for that state directory", async () => {
    const stateDir = newStateDir();
    dirs.push(stateDir);
    writeFileSync(join(stateDir, "keyring.json"), "not json\n");
    const doctor = `'portcullis doctor --state-dir ${stateDir}' says what to do about it.`;
    for (const args of [
      ["unlock"],
      ["audit", "sessions"],
      ["vault", "set", "x", "--deliver", "env", "--from-stdin"],
      ["run", "--", "node", "-e", "0"],
    ]) {
      const r = await runCli(args, { stateDir, env: passphraseEnv(), noTerminal: true, input: "v" });
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(2);
      expect(r.stderr, args.join(" ")).toContain("keyring.json is not a usable keyring: it is not JSON");
      expect(r.stderr.trimEnd().endsWith(doctor), `${args.join(" ")}: ${r.stderr}`).toBe(true);
    }
  });
});
