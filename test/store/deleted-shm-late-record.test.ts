// A gateway whose -shm was deleted writes one more best-effort record (a tools/list's
// catalog_served: no intent, nothing the client waits on) after a second gateway opened the
// store. Written through its old -shm, whose index no longer describes the -wal the second
// appends to, that record took the second's frames with it: the second's calls were gone from
// the chain, and `audit verify` said ok. Only groups holding an intent checked the store's files
// before writing; every group must. Real gateways, real processes, one state directory.
import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { auditActivity } from "../helpers/approvals.js";
import { waitForAuditEvents } from "../helpers/auditWait.js";
import { removeDir } from "../helpers/files.js";
import { runCli, type Session, startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

type Client = Session<import("@modelcontextprotocol/sdk/client/index.js").Client>;

async function gateway(stateDir: string, label: string): Promise<Client> {
  const gw = await startGateway({
    args: ["--label", label, "--approval", "none", "--", ...fixtureCommand("echo")],
    stateDir,
    // no heartbeat: the write is what must notice
    env: { PORTCULLIS_STORE_CHECK_MS: "600000" },
    connectTimeoutMs: 60_000,
  });
  cleanup.push(() => gw.close());
  return gw;
}

const echo = (gw: Client, message: string) =>
  gw.client.callTool({ name: "echo", arguments: { message } }, undefined, { timeout: 60_000 });

it("a best-effort record after the -shm was deleted is not written over a second gateway's: it notices, ends, and the second's calls are kept", async () => {
  const stateDir = newStateDir();
  cleanup.push(() => removeDir(stateDir));
  const first = await gateway(stateDir, "first");
  for (let i = 0; i < 3; i++) expect((await echo(first, `first ${i}`)).isError).toBeFalsy();
  // all of the first's records in the chain before the deletion (a call's end follows its answer)
  await waitForAuditEvents(
    stateDir,
    (all) => all.filter((e) => e.type === "tool_result").length === 3,
    "the first's three results",
  );
  rmSync(join(stateDir, "portcullis.db-shm"));
  const second = await gateway(stateDir, "second");
  for (let i = 0; i < 2; i++) expect((await echo(second, `second ${i}`)).isError).toBeFalsy();

  // the first lists: answered, then its catalog_served is the write that must notice
  expect((await first.client.listTools()).tools.length).toBeGreaterThan(0);
  for (let i = 2; i < 5; i++) expect((await echo(second, `second ${i}`)).isError).toBeFalsy();
  await second.close();
  expect((await second.exited).code).toBe(0);
  await first.close();

  const calls = (await auditActivity(stateDir)).filter((a) => a.server === "second");
  expect(calls.map((a) => a.outcome)).toEqual(Array(5).fill("ok"));
  const verify = await runCli(["audit", "verify", "--state-dir", stateDir]);
  expect(verify.code, verify.stderr).toBe(0);
  const path = join(stateDir, "portcullis.db-shm");
  const said = first
    .stderr()
    .split("\n")
    .filter((l) => l.includes("was deleted or replaced"));
  expect(said).toEqual([expect.stringContaining(`the store ${path} was deleted or replaced`)]);
  expect((await first.exited).code).toBe(2);
}, 120_000);
