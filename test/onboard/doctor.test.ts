// portcullis doctor on a healthy and on a broken setup, as the real CLI in a fake home.
import { spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir } from "../helpers/files.js";
import { CLI, FIXTURES, NODE } from "../helpers/paths.js";
import { rawPeer } from "../helpers/raw.js";
import { newStateDir } from "../helpers/state.js";
import { type FakeUser, fakeUser, read } from "./hosts.js";

const users: FakeUser[] = [];
afterEach(() => {
  for (const u of users.splice(0)) removeDir(u.root);
});
function user(): FakeUser {
  const u = fakeUser();
  users.push(u);
  return u;
}

function withKeyring(u: FakeUser): void {
  mkdirSync(u.stateDir, { recursive: true, mode: 0o700 });
  chmodSync(u.stateDir, 0o700);
  copyFileSync(join(newStateDir(), "keyring.json"), join(u.stateDir, "keyring.json"));
}

describe("portcullis doctor", () => {
  it("healthy: exit 0, the state dir and why, the keyring, every host file and which servers are wrapped", async () => {
    const u = user();
    withKeyring(u);
    expect((await u.cli(["wrap", "claude-code", "--servers", "inventory-local"])).code).toBe(0);
    const r = await u.cli(["doctor", "--json"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.ok).toBe(true);
    expect(report.stateDir).toEqual({ path: u.stateDir, why: "variable", mode: "700" });
    expect(report.keyring).toBe(true);
    // fields, not a sentence: the command that starts it on this state directory
    expect(report.console).toEqual({ running: false, start: `portcullis console --state-dir ${u.stateDir}` });
    expect(report.versions.node).toBe(process.versions.node);
    expect(report.versions.sqlite).toMatch(/^3\.\d+/);
    const files = report.hosts.map((h: { file: string }) => h.file).sort();
    expect(files).toEqual(Object.values(u.files).sort());
    const code = report.hosts.find((h: { host: string }) => h.host === "claude-code");
    expect(code.servers).toEqual([
      { key: "inventory-local", wrapped: true, kind: "stdio" },
      { key: "docs search", wrapped: false, kind: "stdio" },
      { key: "remote", wrapped: false, kind: "http" },
    ]);
    const hint = report.findings.find((f: { what: string }) =>
      f.what.includes("not behind portcullis: docs search"),
    );
    // wrapped in part: wrap leaves the wrapped one as it is and takes the rest by name
    // with the state directory, as the console's above: PORTCULLIS_HOME may not be in the shell it is pasted into
    expect(hint.next).toBe(`portcullis wrap claude-code --servers 'docs search' --state-dir ${u.stateDir}`);

    expect(report.gateways).toEqual([]);

    // A gateway writing to this state directory now: doctor names it and its host's process chain.
    const gateway = rawPeer(NODE, [
      CLI,
      "run",
      "--state-dir",
      u.stateDir,
      "--label",
      "echo-local",
      "--",
      NODE,
      FIXTURES.echo,
    ]);
    try {
      await gateway.initialize();
      const live = JSON.parse((await u.cli(["doctor", "--json"])).stdout);
      expect(live.gateways).toHaveLength(1);
      expect(live.gateways[0].label).toBe("echo-local");
      expect(live.gateways[0].pid).toBe(gateway.pid);
      expect(live.gateways[0].hostChain[0]).toMatch(new RegExp(`^${process.pid} `));
    } finally {
      await gateway.close();
    }

    const text = await u.cli(["doctor", "--state-dir", u.stateDir]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`state directory  ${u.stateDir}  (from the flag, mode 700)`);
    // the HTTP entry is one wrap leaves alone, not one waiting to be wrapped (as --json says)
    expect(text.stdout).toContain("\n    http         remote\n");
    expect(text.stdout).toContain("\n    not wrapped  docs search\n");
    expect(text.stdout).toContain("\n    wrapped      inventory-local\n");
    // no line ends in spaces ("host files       " above the files did)
    expect(text.stdout).toContain("\nhost files\n");
    expect(text.stdout).not.toMatch(/[ \t]$/m);
  });

  it("its advice for servers not behind portcullis works when followed, and leaves HTTP entries out", async () => {
    const u = user();
    withKeyring(u);
    const report = async () => JSON.parse((await u.cli(["doctor", "--json"])).stdout);
    type F = { what: string; next: string };
    const about = (r: { findings: F[] }, file: string) =>
      r.findings.filter((f) => f.what.startsWith(`${file}: `)).map((f) => [f.what, f.next]);
    const mcp = u.files["claude-code"];
    const codex = u.files.codex;

    // never wrapped: the dry run, for the stdio servers only; the HTTP one reported apart
    const fresh = about(await report(), mcp);
    expect(fresh[0]).toEqual([
      `${mcp}: not behind portcullis: inventory-local, docs search`,
      `portcullis wrap claude-code --dry-run --state-dir ${u.stateDir}`,
    ]);
    expect(fresh[1]![0]).toBe(`${mcp}: not stdio servers, which wrap leaves alone: remote`);
    // the entry to write by hand, as wrap writes one: run by the host with its own environment
    // (no PORTCULLIS_HOME, no PATH), it reaches this state directory, not the default one (whose
    // keyring, vault and approvals are not these: without --state-dir it said to run init there)
    const advised = JSON.parse(/ with (\{.*\}), URL its "url"/.exec(fresh[1]![1]!)![1]!) as {
      command: string;
      args: string[];
    };
    const args = advised.args.map((a) =>
      a === "LABEL" ? "advised" : a === "URL" ? "http://127.0.0.1:9/mcp" : a,
    );
    const byHost = spawnSync(advised.command, args, { env: { HOME: u.home }, cwd: u.root, input: "" });
    expect(byHost.stderr.toString()).not.toContain("no keyring");
    expect((await u.cli(["status", "--all"])).stdout).toMatch(/^advised {2}ended/m);
    expect(fresh).toHaveLength(2);
    expect((await u.cli(["wrap", "claude-code", "--dry-run"])).code).toBe(0);

    // every stdio server wrapped: the HTTP entry left is not advice to wrap (which would refuse)
    expect((await u.cli(["wrap", "claude-code"])).code).toBe(0);
    const done = about(await report(), mcp);
    expect(done.map(([what]) => what)).toEqual([
      `${mcp}: not stdio servers, which wrap leaves alone: remote`,
    ]);

    // wrapped in part: wrap the bare ones by name (wrap adds to a file it has wrapped)
    expect((await u.cli(["wrap", "codex", "--servers", "inventory"])).code).toBe(0);
    expect(about(await report(), codex)).toEqual([
      [
        `${codex}: not behind portcullis: docs`,
        `portcullis wrap codex --servers docs --state-dir ${u.stateDir}`,
      ],
    ]);
    const more = await u.cli(["wrap", "codex", "--servers", "docs"]);
    expect(more.code, more.stderr).toBe(0);
    expect(about(await report(), codex)).toEqual([]);
    // and one unwrap takes both away
    const before = read(`${codex}.portcullis-backup`);
    expect((await u.cli(["unwrap", codex])).stdout).toContain("restored byte for byte");
    expect(read(codex)).toBe(before);
  });

  it("a state directory its owner cannot write (mode 500): its real mode, and a problem", async () => {
    const u = user();
    withKeyring(u);
    chmodSync(u.stateDir, 0o500);
    try {
      const r = await u.cli(["doctor", "--json"]);
      expect(r.code).toBe(1);
      const report = JSON.parse(r.stdout);
      expect(report.stateDir.mode).toBe("500");
      const about = report.findings.filter((f: { what: string }) => f.what.startsWith("state directory"));
      expect(about).toEqual([
        {
          ok: false,
          what: `state directory ${u.stateDir} is not writable by its owner (mode 500): gateways cannot write the store or the audit log there`,
          next: `chmod 700 ${u.stateDir}`,
        },
      ]);
      expect(r.stdout).not.toContain("mode 700");
    } finally {
      chmodSync(u.stateDir, 0o700);
    }
  });

  it("broken: exit 1, each problem with a next step", async () => {
    const u = user();
    mkdirSync(u.stateDir, { recursive: true });
    chmodSync(u.stateDir, 0o755);
    writeFileSync(u.files.cursor, "{ not json");
    const r = await u.cli(["doctor", "--json"]);
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout);
    expect(report.ok).toBe(false);
    const problems = report.findings.filter((f: { ok: boolean }) => !f.ok);
    expect(problems.map((p: { what: string; next: string }) => [p.what, p.next])).toEqual([
      [`state directory ${u.stateDir} is readable by others (mode 755)`, `chmod 700 ${u.stateDir}`],
      [`no keyring in ${u.stateDir}`, `portcullis init --state-dir ${u.stateDir}`],
      [
        expect.stringMatching(new RegExp(`^${u.files.cursor} does not parse`)),
        `fix ${u.files.cursor} (the host cannot read it either)`,
      ],
    ]);
    const text = await u.cli(["doctor"]);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain("PROBLEM  no keyring in");
  });

  it("a state directory that does not exist: the init to run names it, as a flag would not be taken by a bare init", async () => {
    const u = user();
    const typo = join(u.root, "state-typo");
    for (const args of [
      ["doctor", "--json", "--state-dir", typo],
      ["doctor", "--json"],
    ]) {
      const r = await u.cli(args);
      expect(r.code).toBe(1);
      const dir = args.includes(typo) ? typo : u.stateDir;
      // a bare 'portcullis init' would create the default directory, not this one
      expect(JSON.parse(r.stdout).findings[0]).toEqual({
        ok: false,
        what: `state directory ${dir} does not exist`,
        next: `give the --state-dir or PORTCULLIS_HOME your gateways use, or set this one up: portcullis init --state-dir ${dir}`,
      });
    }
    // a path a shell must be given quoted, one with control characters escaped (never raw): the
    // command is last, after a colon, and pastes whole
    for (const [name, word] of [
      ["it's here", `'${u.root}/it'\\''s here'`],
      ["new\nline\u001b[2J", `$'${u.root}/new\\x0aline\\x1b[2J'`],
    ]) {
      const r = await u.cli(["doctor", "--json", "--state-dir", join(u.root, name!)]);
      expect(JSON.parse(r.stdout).findings[0].next).toMatch(
        new RegExp(`set this one up: portcullis init --state-dir ${word!.replace(/[$\\[\]]/g, "\\$&")}$`),
      );
    }
  });

  it("a FIFO in place of a host file is a problem, not a hang; wrap and drill refuse it", async () => {
    const u = user();
    const mcp = u.files["claude-code"];
    rmSync(mcp);
    expect(spawnSync("mkfifo", [mcp]).status).toBe(0);
    const why = `${mcp} cannot be read (it is not a regular file: a FIFO, socket or device)`;
    const r = await u.cli(["doctor", "--json"]);
    expect(r.code).toBe(1);
    const problems = JSON.parse(r.stdout).findings.filter((f: { ok: boolean }) => !f.ok);
    expect(problems.map((p: { what: string }) => p.what)).toContain(why);
    const wrap = await u.cli(["wrap", "claude-code", "--dry-run"]);
    expect(wrap.code).toBe(2);
    expect(wrap.stderr).toBe(`portcullis wrap: ${why}; nothing was written.\n`);
    const drill = await u.cli(["drill", "inventory-local"]);
    expect(drill.code).toBe(2);
    expect(drill.stderr).toContain(why);
  });
});
