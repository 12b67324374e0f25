// A host that speaks HTTP is put behind portcullis with `run --listen`: the host's entry gets the
// front's URL and its bearer token (README, "Over HTTP: run --listen"). doctor took that entry
// for a server not behind portcullis ("to guard one, replace its entry by hand …") and the
// front's token in its headers for an upstream credential to store in the vault behind a
// `run --url` of the front (a gateway in front of a gateway). Now the entry is said to be behind
// the front, nothing more: for a front running (recorded in the state directory) and for a label
// of portcullis.json with `listen` (a front not started yet). Real gateway, real CLI.
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
  const findings = (JSON.parse(r.stdout) as { findings: Finding[] }).findings.filter((f) =>
    f.what.startsWith(mcp),
  );
  return { mcp, findings, out: r.stdout + r.stderr };
}

it("a host entry whose url is a running --listen front: behind portcullis, its token no problem", async () => {
  const l = await startListener(fixtureCommand("echo"), {});
  cleanup.push(() => l.close());
  const project = tempDir("portcullis-front-");
  const { mcp, findings, out } = await doctorOn(l.stateDir, project, l.url, l.token!);
  expect(findings).toEqual([
    {
      ok: true,
      what: `${mcp}: behind portcullis's --listen front: guarded (label "http-test")`,
      next: "nothing",
    },
  ]);
  expect(out).not.toContain(l.token!);
});

it("a host entry whose url is the listen of a portcullis.json label: behind portcullis", async () => {
  const project = tempDir("portcullis-front-");
  const [command, ...args] = fixtureCommand("echo");
  writeFileSync(
    join(project, "portcullis.json"),
    JSON.stringify({ servers: { echo: { command, args, listen: "127.0.0.1:8765" } } }),
  );
  const { mcp, findings } = await doctorOn(
    newStateDir(),
    project,
    "http://127.0.0.1:8765/mcp/",
    "t0k3n-of-the-front-9a8b",
  );
  expect(findings).toEqual([
    { ok: true, what: `${mcp}: behind portcullis's --listen front: guarded (label "echo")`, next: "nothing" },
  ]);
});
