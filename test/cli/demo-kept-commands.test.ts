// `portcullis demo --keep` keeps its state directory, and the commands it prints are for a human
// to run against it. Its closing line said "'portcullis egress' lists every destination per
// epoch", and its narration "$ portcullis vault set …", "$ portcullis unlock --for 10m", without
// the directory: typed as printed they read (or wrote) the user's own default state directory,
// which knows nothing of the demo. Every one now carries `--state-dir DIR`, shell-quoted (the
// TMPDIR here holds a space), and the egress command, run as printed, reads the demo's record.
// Its hint for the console named `npm run demo -- --console`, a checkout's script; it names
// `portcullis demo --console`, the command the user has.
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";

describe("demo --keep: the commands it prints name its state directory", () => {
  it("every command carries --state-dir 'DIR', and the egress one runs as printed", async () => {
    const tmp = tempDir("portcullis demo kept ");
    const r = await runCli(["demo", "--keep"], {
      timeoutMs: 120_000,
      env: { PORTCULLIS_INSECURE_TEST_KDF: "1", TMPDIR: tmp },
    });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const kept = /^\(kept: (.+)\)$/m.exec(r.stdout)![1]!;
    const stateDir = join(kept, "state");
    const flag = ` --state-dir '${stateDir}'`;

    // the narration: each command shown as run ("$ portcullis …") ran in the demo's directory
    const shown = r.stdout.split("\n").filter((line) => line.trimStart().startsWith("$ portcullis "));
    expect(shown.map((line) => line.trim().split(" ")[2])).toEqual(["run", "vault", "unlock"]);
    for (const line of shown) expect(line, line).toContain(flag);

    // the console's hint names the command an installed portcullis has, not a checkout's npm
    // script (it said 'npm run demo -- --console'); demo.test.ts runs that flag
    expect(r.stdout).toContain(
      "console: not started; 'portcullis demo --console' runs this story with it open at http://127.0.0.1:<port>\n",
    );
    // (the demo's own words: the process chains it shows are of whatever launched this test,
    // `npm test` under CI, and are the chain's "│" lines)
    const own = r.stdout.split("\n").filter((line) => !line.trimStart().startsWith("│"));
    for (const line of own) expect(line, line).not.toContain("npm run");

    // the closing line: in double quotes, as the directory itself needed single ones
    const egress = `"portcullis egress${flag}"`;
    expect(r.stdout).toContain(
      `nothing was released to code no human approved; ${egress} lists every destination per epoch\n`,
    );
    const read = await runCli(["egress", "--state-dir", stateDir]);
    expect(read.code, read.stderr).toBe(0);
    expect(read.stdout).toMatch(/inventory-api-demo {2}epoch /);
    // nothing of the demo runs on after it
    const ps = execFileSync("ps", ["-eo", "args"], { encoding: "utf8" });
    expect(ps.split("\n").filter((line) => line.includes(tmp))).toEqual([]);
  });
});
