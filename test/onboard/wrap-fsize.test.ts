// `portcullis wrap` under a file size limit (`ulimit -f`, set by the shell that starts it; no
// privilege needed) smaller than the host's configuration file (a `~/.claude.json` keeps every
// project's history and grows to hundreds of KiB). One write(2) past the limit writes the part below
// it and returns its length (Node ignores SIGXFSZ); wrap took that for the whole file, and renamed
// a cut backup, a cut record and a cut host file into place, then said "wrapped" (exit 0): the
// host's configuration cut mid-string (it no longer parses), and nothing left to restore it from.
// What must hold: wrap exits 2 naming the limit, the host file byte for byte as it was, no backup,
// record or temporary file left behind; without the limit the same wrap is made.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { CLI, NODE } from "../helpers/paths.js";
import { fakeUsersOfEachTest, read } from "./hosts.js";

const user = fakeUsersOfEachTest();

describe("wrap under a file size limit below the host file's size", () => {
  it("exits 2 naming the limit; the host file is untouched, nothing cut is left; the wrap is made without the limit", async () => {
    const u = user();
    const file = u.files.cursor;
    // a configuration of 20 KB, past a limit of 16 blocks (8 KiB)
    const text = `${read(file).trimEnd().replace(/\}$/, "")}\t"padding": "${"x".repeat(20_000)}",\n}\n`;
    writeFileSync(file, text);
    const r = spawnSync("sh", ["-c", 'ulimit -f 16 && exec "$@"', "sh", NODE, CLI, "wrap", "cursor"], {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...u.env },
      cwd: u.project,
      encoding: "utf8",
    });
    expect(r.stdout).not.toContain("wrapped inventory");
    expect(r.stderr).toMatch(/file size limit \(ulimit -f: 8192 bytes\)/);
    expect(r.status, r.stderr).toBe(2);
    expect(read(file)).toBe(text);
    expect(readdirSync(dirname(file)).sort()).toEqual(["mcp.json"]);
    const records = join(u.stateDir, "wrapped");
    expect(existsSync(records) ? readdirSync(records) : []).toEqual([]);

    const again = await u.cli(["wrap", "cursor"]);
    expect(again.code, again.stderr).toBe(0);
    expect(read(`${file}.portcullis-backup`)).toBe(text);
    expect(read(file)).toContain('"padding"');
    expect(read(file)).toContain("--label");
  });
});
