// portcullis drill, run as the real CLI against real servers: server-everything, the two-revision
// inventory fixture, and a wrapper that runs the real server out of the supervisor's sight.
import { execFileSync } from "node:child_process";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { EVERYTHING, NODE } from "../helpers/paths.js";
import { makeProject, type Project } from "../helpers/project.js";
import { passphraseEnv } from "../helpers/state.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) removeDir(d);
});

function project(servers: Record<string, unknown>): string {
  const dir = tempDir("portcullis-drill-test-");
  dirs.push(dir);
  writeFileSync(join(dir, "portcullis.json"), JSON.stringify({ servers }, null, 2));
  return dir;
}

const drill = (cwd: string, args: string[], env: Record<string, string> = {}) =>
  runCli(["drill", ...args], { cwd, env: { ...passphraseEnv(), HOME: cwd, ...env }, timeoutMs: 120_000 });

describe("portcullis drill", () => {
  it("server-everything: every step passes, the stale call is refused, both epochs are audited", async () => {
    const dir = project({
      everything: { command: NODE, args: EVERYTHING.args(), identity: { include: ["rev.txt"] } },
    });
    writeFileSync(join(dir, "rev.txt"), "1\n");
    // the drill's throwaway state directory is made under this TMPDIR
    const tmp = tempDir("portcullis-drill-tmp-");
    dirs.push(tmp);
    const r = await drill(
      dir,
      ["everything", "--tool", "echo", "--args", '{"message":"drill"}', "--rebuild", "echo 2 > rev.txt"],
      { TMPDIR: tmp },
    );
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    // the drill decided its own request: no console was started for its state directory
    const ps = execFileSync("ps", ["-eo", "args"], { encoding: "utf8" });
    expect(ps.split("\n").filter((line) => line.includes(tmp))).toEqual([]);
    for (let n = 1; n <= 7; n++) expect(r.stdout).toMatch(new RegExp(`^✓ ${n}\\. `, "m"));
    expect(r.stdout).toMatch(/^✓ 5\. .*authorization_stale checked: refused -32051/m);
    expect(r.stdout).toMatch(/calls in epoch A: 1, in epoch B: 2/);
    expect(r.stdout).toContain("drill: every step run passed");
  });

  it("without --tool it calls nothing: the call steps are skipped, the rebuild is still proved", async () => {
    const dir = project({
      everything: { command: NODE, args: EVERYTHING.args(), identity: { include: ["rev.txt"] } },
    });
    writeFileSync(join(dir, "rev.txt"), "1\n");
    const r = await drill(dir, ["everything", "--rebuild", "echo 2 > rev.txt"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^- 3\. .*skipped \(no --tool named/m);
    expect(r.stdout).toMatch(/^✓ 4\. /m);
    expect(r.stdout).not.toMatch(/^ {4}echo /m);
  });

  it("the two-revision fixture: the rebuild to revision B is a new epoch and the old grant does not follow", async () => {
    const a = makeProject("A");
    const b = makeProject("B");
    dirs.push(dirname(a.dir), dirname(b.dir));
    writeFileSync(
      join(a.dir, "portcullis.json"),
      JSON.stringify({
        servers: { inventory: { command: a.command[0], args: a.command.slice(1), env: a.env } },
      }),
    );
    const r = await drill(a.dir, [
      "inventory",
      "--tool",
      "read_status",
      "--rebuild",
      `cp ${b.entry} ${a.entry}`,
    ]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^✓ 4\. .*identity digest changed\)/m);
    expect(r.stdout).toContain("refused -32051");
    expect(a.records().map((c) => [c.revision, c.tool])).toEqual([
      ["A", "read_status"],
      ["B", "read_status"],
    ]);
  });

  it("the two-revision fixture without --rebuild: the server process is restarted (same code, files untouched), every step passes", async () => {
    const a = makeProject("A");
    dirs.push(dirname(a.dir));
    writeFileSync(
      join(a.dir, "portcullis.json"),
      JSON.stringify({
        servers: { inventory: { command: a.command[0], args: a.command.slice(1), env: a.env } },
      }),
    );
    const before = { text: readFileSync(a.entry, "utf8"), mtimeMs: statSync(a.entry).mtimeMs };
    const r = await drill(a.dir, ["inventory", "--tool", "read_status"]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    for (let n = 1; n <= 7; n++) expect(r.stdout).toMatch(new RegExp(`^✓ ${n}\\. `, "m"));
    expect(r.stdout).toContain("restarting the server process (same code)");
    expect(r.stdout).toContain("--rebuild CMD to run a real build");
    expect(r.stdout).toMatch(/^✓ 4\. .*; respawn, same identity digest\)/m);
    expect(r.stdout).toContain("refused -32051");
    expect(r.stdout).toMatch(/calls in epoch A: 1, in epoch B: 2/);
    expect(r.stdout).toContain("drill: every step run passed");
    // the same revision answered both times: the restart ran the same code
    expect(a.records().map((c) => [c.revision, c.tool])).toEqual([
      ["A", "read_status"],
      ["A", "read_status"],
    ]);
    expect({ text: readFileSync(a.entry, "utf8"), mtimeMs: statSync(a.entry).mtimeMs }).toEqual(before);
  });

  /** portcullis.json for the inventory fixture `p`, with the credential adjust_inventory needs. */
  function inventory(p: Project, approval?: Record<string, unknown>): void {
    writeFileSync(
      join(p.dir, "portcullis.json"),
      JSON.stringify({
        servers: {
          inventory: {
            command: p.command[0],
            args: p.command.slice(1),
            env: { ...p.env, ...p.credentialEnv },
            ...(approval ? { approval } : {}),
          },
        },
      }),
    );
  }

  it("--args that do not validate: step 3 fails on the gateway's answer, not after waiting for an approval request", async () => {
    const b = makeProject("B");
    dirs.push(dirname(b.dir));
    inventory(b);
    // revision B requires warehouse
    const r = await drill(b.dir, ["inventory", "--tool", "adjust_inventory", "--args", '{"sku":"S"}']);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toMatch(
      /^✗ 3\. [^\n]*before asking for approval: Invalid arguments for tool "adjust_inventory"[^\n]*"warehouse"/m,
    );
    expect(r.stdout).not.toContain("timed out");
    expect(b.records()).toEqual([]);
  });

  it("a rebuild whose schema --args no longer matches: step 6 says so, with the validation error", async () => {
    const a = makeProject("A");
    const b = makeProject("B");
    dirs.push(dirname(a.dir), dirname(b.dir));
    inventory(a);
    const r = await drill(a.dir, [
      "inventory",
      "--tool",
      "adjust_inventory",
      "--args",
      '{"sku":"S"}',
      "--rebuild",
      `cp ${b.entry} ${a.entry}`,
    ]);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toContain("refused -32051");
    expect(r.stdout).toMatch(
      /^✗ 6\. [^\n]*--args no longer matches the rebuilt schema of adjust_inventory[^\n]*Missing required field "warehouse"/m,
    );
    expect(r.stdout).not.toContain("timed out");
    expect(a.records().map((c) => [c.revision, c.tool])).toEqual([["A", "adjust_inventory"]]);
  });

  it("a tool that needs no approval: step 3 says so and what the drill needs", async () => {
    const a = makeProject("A");
    dirs.push(dirname(a.dir));
    inventory(a, { default: "none" });
    const r = await drill(a.dir, ["inventory", "--tool", "read_status"]);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toMatch(
      /^✗ 3\. [^\n]*without asking for approval: read_status needs none \(approval mode "none"\)[^\n]*"session" or "per-call"/m,
    );
    expect(r.stdout).not.toContain("timed out");
  });

  it("a per-call tool (README's example): approved for one call each time; after the rebuild the old call asks again, every step passes", async () => {
    const b = makeProject("B");
    const c = makeProject("C");
    dirs.push(dirname(b.dir), dirname(c.dir));
    inventory(b, { default: "session", tools: { adjust_inventory: "per-call" } });
    const r = await drill(b.dir, [
      "inventory",
      "--tool",
      "adjust_inventory",
      "--args",
      '{"sku":"S","warehouse":"W"}',
      "--rebuild",
      `cp ${c.entry} ${b.entry}`,
    ]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    for (let n = 1; n <= 7; n++) expect(r.stdout).toMatch(new RegExp(`^✓ ${n}\\. `, "m"));
    expect(r.stdout).toMatch(/^✓ 3\. .*approved for this call only \(per-call tool\)/m);
    // no session grant to go stale: what is checked is that the same call in epoch B asks again
    expect(r.stdout).toMatch(
      /^✓ 5\. .*per-call tool, so a new approval was checked.*waited on new approval request \w+; denied by the drill, refused -32057/m,
    );
    expect(r.stdout).not.toContain("-32051");
    expect(r.stdout).toMatch(/^✓ 6\. .*approved for this call only \(per-call tool\) in epoch/m);
    expect(r.stdout).toMatch(/calls in epoch A: 1, in epoch B: 2/);
    // the call denied in step 5 never reached the server
    expect(b.records().map((x) => [x.revision, x.tool])).toEqual([
      ["B", "adjust_inventory"],
      ["C", "adjust_inventory"],
    ]);
  });

  it("a wrapper that runs the real server out of sight: the drill says it could not prove the rebuild, exit 1", async () => {
    const dir = project({ hidden: { command: NODE, args: ["wrapper.mjs"] } });
    writeFileSync(join(dir, "real.mjs"), `import ${JSON.stringify(EVERYTHING.entry)};\n`);
    writeFileSync(
      join(dir, "wrapper.mjs"),
      [
        'import { spawn } from "node:child_process";',
        "// the real server's path is read at run time: nothing the supervisor digests names it",
        'const child = spawn(process.execPath, [process.env.REAL ?? "real.mjs", "stdio"], { stdio: "inherit" });',
        "child.on('exit', (c) => process.exit(c ?? 1));",
        "",
      ].join("\n"),
    );
    // no epoch can come: the drill's bound for each wait (30 s by default) is what step 4 waits out.
    // 6 s: steps 1-3 (the gateway's start, a list) must still pass within it on a loaded machine.
    const r = await drill(dir, ["hidden", "--rebuild", "echo '// v2' >> real.mjs"], {
      PORTCULLIS_DRILL_WAIT_MS: "6000",
    });
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toMatch(
      /^✗ 4\. rebuild and see a new execution epoch: no new execution epoch within 6 s/m,
    );
    expect(r.stdout).toContain("drill: could not prove step 4 (rebuild and see a new execution epoch)");
  });

  it("a gateway that cannot launch its server: step 1 fails at once with the gateway's own sentence, not a timeout", async () => {
    const dir = project({ broken: { command: join(tempDir(), "no-such-server"), args: [] } });
    const r = await drill(dir, ["broken", "--tool", "read_status"]);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toMatch(/^✗ 1\. [^\n]*the gateway (?:failed|exited)/m);
    expect(r.stdout).toMatch(
      /^ {4}the gateway's last stderr lines:\n {4}\| portcullis run: [^\n]*no-such-server \(it does not exist or is not executable\)/m,
    );
    expect(r.stdout).not.toContain("timed out");
  });

  it("a gateway that exits during a step: the step fails when it exits, naming it, with its last stderr lines", async () => {
    const a = makeProject("A");
    dirs.push(dirname(a.dir));
    // the server notes its parent, the gateway, so that the "rebuild" can end the gateway
    writeFileSync(
      join(a.dir, "noted.mjs"),
      [
        'import { writeFileSync } from "node:fs";',
        'writeFileSync("gateway.pid", String(process.ppid));',
        `await import(${JSON.stringify(pathToFileURL(a.entry).href)});`,
        "",
      ].join("\n"),
    );
    writeFileSync(
      join(a.dir, "portcullis.json"),
      JSON.stringify({ servers: { inventory: { command: NODE, args: ["noted.mjs"], env: a.env } } }),
    );
    const r = await drill(a.dir, ["inventory", "--rebuild", "kill -9 $(cat gateway.pid)"]);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toMatch(/^✗ 4\. rebuild and see a new execution epoch: the gateway exited$/m);
    expect(r.stdout).toMatch(
      /^ {4}the gateway's last stderr lines:\n(?: {4}\| .*\n)* {4}\| portcullis\[inventory\]: serving /m,
    );
    expect(r.stdout).not.toContain("no new execution epoch");
  });
});
