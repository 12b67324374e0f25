// A host that speaks HTTP is put behind portcullis with `run --listen`: the host's entry gets the
// front's URL and its bearer token (README, "Over HTTP: run --listen"). doctor took that entry
// for a server not behind portcullis ("to guard one, replace its entry by hand …") and the
// front's token in its headers for an upstream credential to store in the vault behind a
// `run --url` of the front (a gateway in front of a gateway). Now the entry is said to be behind
// the front, nothing more: for a front running (recorded in the state directory) and for a label
// of portcullis.json with `listen` (a front not started yet). The list of the file's servers
// said "http" for it all the same, as for an entry no portcullis guards: it now says "via front"
// with the front's label (`front` in --json). Real gateway, real CLI.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";
import { startListener } from "../http/listen.js";

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

type Finding = { ok: boolean; what: string; next: string };

async function doctorOn(stateDir: string, project: string, url: string, token: string) {
  const mcp = join(project, ".mcp.json");
  const entry = { type: "http", url, headers: { Authorization: `Bearer ${token}` } };
  writeFileSync(mcp, JSON.stringify({ mcpServers: { guarded: entry } }));
  const r = await runCli(["doctor", "--json"], { stateDir, cwd: project, env: { HOME: project } });
  const report = JSON.parse(r.stdout) as {
    findings: Finding[];
    hosts: { file: string; servers: unknown[] }[];
  };
  const findings = report.findings.filter((f) => f.what.startsWith(mcp));
  const servers = report.hosts.find((h) => h.file === mcp)?.servers;
  const text = await runCli(["doctor"], { stateDir, cwd: project, env: { HOME: project } });
  return { mcp, findings, servers, text: text.stdout, out: r.stdout + r.stderr + text.stdout + text.stderr };
}

/** The line of the text report's list of host files that names the server key "guarded". */
const listed = (text: string) => text.split("\n").find((l) => /^ {4}\S.*\s{2}guarded\b/.test(l));

it("a host entry whose url is a running --listen front: behind portcullis, its token no problem", async () => {
  const l = await startListener(fixtureCommand("echo"), {});
  cleanup.push(() => l.close());
  const project = tempDir("portcullis-front-");
  const { mcp, findings, servers, text, out } = await doctorOn(l.stateDir, project, l.url, l.token!);
  expect(findings).toEqual([
    {
      ok: true,
      what: `${mcp}: behind portcullis's --listen front: guarded (label "http-test")`,
      next: "nothing",
    },
  ]);
  // listed as guarded through the front, not as a bare "http" entry
  expect(servers).toEqual([{ key: "guarded", wrapped: false, kind: "http", front: "http-test" }]);
  expect(listed(text)).toBe(
    `    via front    guarded  (behind portcullis's --listen front, label "http-test")`,
  );
  expect(out).not.toContain(l.token!);
});

it("a host entry whose url is the listen of a portcullis.json label: behind portcullis", async () => {
  const project = tempDir("portcullis-front-");
  const [command, ...args] = fixtureCommand("echo");
  writeFileSync(
    join(project, "portcullis.json"),
    JSON.stringify({ servers: { echo: { command, args, listen: "127.0.0.1:8765" } } }),
  );
  const { mcp, findings, servers, text } = await doctorOn(
    newStateDir(),
    project,
    "http://127.0.0.1:8765/mcp/",
    "t0k3n-of-the-front-9a8b",
  );
  expect(findings).toEqual([
    { ok: true, what: `${mcp}: behind portcullis's --listen front: guarded (label "echo")`, next: "nothing" },
  ]);
  expect(servers).toEqual([{ key: "guarded", wrapped: false, kind: "http", front: "echo" }]);
  expect(listed(text)).toBe(`    via front    guarded  (behind portcullis's --listen front, label "echo")`);
});

it("an HTTP entry whose url is no front of this state directory: still listed as http, without a front", async () => {
  const project = tempDir("portcullis-front-");
  const { servers, text } = await doctorOn(
    newStateDir(),
    project,
    "http://127.0.0.1:8766/mcp",
    "t0k3n-of-nobody-4c5d6e",
  );
  expect(servers).toEqual([{ key: "guarded", wrapped: false, kind: "http" }]);
  expect(listed(text)).toBe("    http         guarded");
});
