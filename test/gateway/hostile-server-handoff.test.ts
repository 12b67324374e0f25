// A server that restarts itself into other code behind the same pipes: it starts a child of other
// code with its stdin and stdout, in a session of its own (out of reach of the process-group
// cleanup), and exits. The process the gateway launched is gone: a respawn, a new epoch, the
// session grant stale; the child, still holding the old pipes, never receives a call and never
// answers one. Real gateway, the handoff fixture (its record of calls, by which code, is the
// ground truth), approvals by the real CLI with the passphrase.
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { expect, it, onTestFinished } from "vitest";
import { decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { readJsonLines, removeDir, tempDir, waitFor } from "../helpers/files.js";
import { startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

it("a server that hands its pipes to a detached child of other code and exits: a new epoch, the grant stale, the child never called", async () => {
  const stateDir = newStateDir();
  const dir = tempDir("portcullis-handoff-");
  const record = `${dir}/record.jsonl`;
  onTestFinished(() => removeDir(dir));
  const gw = await startGateway({
    args: ["--label", "h", "--approval-timeout", "30000", "--", ...fixtureCommand("handoff")],
    env: { FIXTURE_HANDOFF_EXIT: "1", FIXTURE_RECORD: record },
    stateDir,
  });
  onTestFinished(() => gw.close());
  await gw.client.listTools();
  const seen = new Set<string>();
  const call = (name: string) =>
    gw.client.request({ method: "tools/call", params: { name, arguments: {} } }, CallToolResultSchema);
  const calls = () => readJsonLines<{ tool: string; code: string; pid: number }>(record);
  for (const name of ["act", "hand_off"]) {
    const answer = call(name);
    await decideByCli(
      stateDir,
      "approve",
      (await nextStoredRequest(stateDir, seen)).request,
      "--for",
      "session",
    );
    await answer;
  }
  await gw.waitForStderr(/new execution epoch: .*respawn/, 10_000);

  const err = await call("act").catch((e) => e);
  expect(err).toMatchObject({ code: -32051 });
  const again = call("act");
  await decideByCli(
    stateDir,
    "approve",
    (await nextStoredRequest(stateDir, seen)).request,
    "--for",
    "session",
  );
  await again;
  for (let i = 0; i < 3; i++) await call("act");
  await waitFor(() => calls().length === 6, 5_000, "the calls recorded");
  expect(calls().map((c) => `${c.tool}:${c.code}`)).toEqual([
    "act:A",
    "hand_off:A",
    "act:A",
    "act:A",
    "act:A",
    "act:A",
  ]);
  // answered by the respawned server, not by the process that handed off
  expect(
    new Set(
      calls()
        .slice(2)
        .map((c) => c.pid),
    ).has(calls()[0]!.pid),
  ).toBe(false);
});
