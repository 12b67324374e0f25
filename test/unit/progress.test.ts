import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { REPO } from "../helpers/paths.js";

// A process that shows progress three times, then ends the line and says END on stdout.
const snippet = `
const { stderrProgress } = await import(${JSON.stringify(pathToFileURL(join(REPO, "dist", "cli", "progress.js")).href)});
const p = stderrProgress((n) => "verified " + n + " records", { quietMs: 0, redrawMs: 0 });
for (const n of [1024, 2048, 3072]) p.update(n);
p.done();
p.done();
process.stdout.write("END\\n");
`;

describe("progress on stderr", () => {
  it("is drawn in place on a terminal and erased when the work ends", () => {
    // script(1) gives the child a pseudo-terminal; what the terminal received comes out on stdout.
    const r = spawnSync(
      "script",
      ["-qec", `${process.execPath} --input-type=module -e '${snippet}'`, "/dev/null"],
      {
        encoding: "utf8",
        timeout: 30_000,
      },
    );
    expect(r.status, r.stderr).toBe(0);
    const out = r.stdout.replace(/\r\n/g, "\n");
    expect(out).toContain("\r\x1b[Kverified 3072 records");
    // three draws, then erased once (a second done() writes nothing), then END on a clean line
    expect(out.split("\r\x1b[K")).toHaveLength(5);
    expect(out.endsWith("verified 3072 records\r\x1b[KEND\n")).toBe(true);
  });

  it("writes nothing when stderr is not a terminal", () => {
    const r = spawnSync(process.execPath, ["--input-type=module", "-e", snippet], { encoding: "utf8" });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe("END\n");
  });
});
