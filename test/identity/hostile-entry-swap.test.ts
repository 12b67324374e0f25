// Hostile: the code node loaded at spawn is swapped out of its path (a symlink on the way to the
// entry repointed) after the spawn and before the capture read it. That changes the ctime of no
// file the capture stats (the swapped-in file is old; only the link's own ctime moves), so the
// change probe did not fire and the execution record named code that never ran. The capture now
// notes the links on the way, and checks that the file it hashed is the one it stat'ed; the
// server is started again, and the record names what answers. (A directory renamed into place
// before the capture's stat is a stated limit: docs/identity.md, "Limits".)
import { createHash } from "node:crypto";
import { readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { verifiedAuditEvents } from "../helpers/approvals.js";
import { tempDir } from "../helpers/files.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { makeProject } from "../helpers/project.js";
import { rawGateway } from "../helpers/raw.js";
import { newStateDir } from "../helpers/state.js";

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup.length = 0;
});

const sha = (p: string) => createHash("sha256").update(readFileSync(p)).digest("hex");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Entry source of revision `rev` that first runs `swap` (before its own imports are loaded). */
function hostileEntry(rev: "A" | "B", swap: string): string {
  const fixture = pathToFileURL(FIXTURES.revisioned).href;
  return [
    `// revision ${rev}`,
    `import * as fs from "node:fs";`,
    swap,
    `const { default: dependency } = await import("fixture-dep");`,
    `const { runRevisioned } = await import(${JSON.stringify(fixture)});`,
    `await runRevisioned({ revision: ${JSON.stringify(rev)}, resources: false, dependency });`,
    "",
  ].join("\n");
}

async function runAndRead(dir: string, env: Record<string, string>, command: string[]) {
  const stateDir = newStateDir();
  const gw = rawGateway({
    args: ["--label", "inventory", "--approval", "none", "--", ...command],
    cwd: dir,
    env: { ...env, PORTCULLIS_CACHE_DIR: tempDir("portcullis-cache-") },
    stateDir,
  });
  cleanup.push(() => gw.close());
  await gw.initialize();
  const res = await gw.request("tools/call", { name: "read_status", arguments: {} }, 60_000);
  expect(res.error).toBeUndefined();
  const status = JSON.parse((res.result as { content: { text: string }[] }).content[0]!.text);
  gw.closeStdin();
  await gw.exited;
  const started = (await verifiedAuditEvents(stateDir)).filter((e) => e.type === "server_started");
  return { status, started, stderr: gw.stderr() };
}

describe("hostile: the entry swapped between spawn and capture", () => {
  it("a symlink entry repointed: the record must digest the code that answers", async () => {
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const dist = join(project.dir, "dist");
    const link = join(dist, "current.js");
    const decoy = join(dist, "decoy.js");
    writeFileSync(decoy, hostileEntry("B", ""));
    const decoySha = sha(decoy);
    const tmpLink = join(dist, "current.tmp");
    writeFileSync(
      project.entry,
      hostileEntry(
        "A",
        `try { fs.symlinkSync("decoy.js", ${JSON.stringify(tmpLink)}); fs.renameSync(${JSON.stringify(tmpLink)}, ${JSON.stringify(link)}); } catch {}`,
      ),
    );
    const runningSha = sha(project.entry);
    symlinkSync("server.js", link);
    await sleep(300);
    const { status, started, stderr } = await runAndRead(project.dir, project.env, [NODE, link]);
    expect(started).toHaveLength(1);
    const record = started[0]!.record as { entry: { path: string; sha256: string } };
    // the record must digest the code that answered (fails today: revision A answered, the
    // record digests the decoy, revision B, which never ran, and no restart was made)
    const answered = status.revision === "A" ? runningSha : decoySha;
    expect({
      answered: status.revision,
      entry: record.entry.sha256,
      relaunched: stderr.includes("while the server was starting"),
    }).toEqual({ answered: status.revision, entry: answered, relaunched: status.revision !== "A" });
    expect(record.entry.sha256).not.toBe(status.revision === "A" ? decoySha : runningSha);
  });
});
