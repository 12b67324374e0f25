// `audit sessions` of a run another process ended while its gateway still served it. A same-user
// process edits the store's rows of a running gateway so that it looks gone; the next gateway on
// the state directory closes its call in flight (gateway_gone) and ends its run (run_ended,
// reason gateway_gone). The running gateway goes on: its call's answer, and a call it serves
// after, are recorded under the run after its end. `audit sessions` says so (table and --json),
// rather than showing a run that ended as gone with an ordinary count of calls; and the next
// gateway's own records are not taken for the run it ended.
import { spawn } from "node:child_process";
import { afterEach, expect, it } from "vitest";
import { waitFor } from "../helpers/files.js";
import { hostEnv, runCli, startInventory } from "../helpers/gateway.js";
import { liveGatewayMadeToLookGone } from "../helpers/lookGone.js";
import { CLI, NODE } from "../helpers/paths.js";
import type { Project } from "../helpers/project.js";
import { passphraseEnv } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

interface Entry {
  run: string | null;
  server?: string;
  endReason?: string | null;
  epochs?: string[];
  calls?: number;
  callsAfterEnd?: number;
}

/**
 * A gateway with a slow_write in flight whose rows are edited to look gone; `next` (another
 * gateway on the state directory) then ends its run; the live gateway's call is answered after,
 * and it serves one more call. The sessions (--json) and the table of `audit sessions`.
 */
async function forgedEnd(next: (project: Project, stateDir: string) => Promise<void>) {
  const { project, stateDir, live, answer } = await liveGatewayMadeToLookGone(cleanup);

  await next(project, stateDir);

  project.release();
  await answer; // recorded after the forged end
  await live.client.callTool({ name: "slow_write", arguments: {} }); // begun after it
  await live.close();

  const json = await runCli(["audit", "sessions", "--json", "--state-dir", stateDir], {
    env: passphraseEnv(),
  });
  expect(json.code, json.stderr).toBe(0);
  const entries = JSON.parse(json.stdout) as Entry[];
  const ended = entries.filter((s) => s.endReason === "gateway_gone");
  expect(ended).toHaveLength(1);
  const table = await runCli(["audit", "sessions", "--state-dir", stateDir], { env: passphraseEnv() });
  expect(table.code, table.stderr).toBe(0);
  return { entries, gone: ended[0]!, table: table.stdout };
}

const AFTER_END =
  /calls after its end: 2 \(recorded by its gateway, which still served the run after another process ended it\)/;

it("a run ended as gone by the next gateway while its own still served it: its calls after that end are counted and shown", async () => {
  const { entries, gone, table } = await forgedEnd(async (project, stateDir) => {
    const next = await startInventory(project, ["--approval", "none"], { stateDir });
    await next.client.listTools();
    await next.close();
  });
  expect(gone.calls).toBe(2);
  expect(gone.callsAfterEnd).toBe(2);
  // the next gateway's run: none of its calls after its end
  const others = entries.filter((s) => s.run !== gone.run);
  expect(others.map((s) => s.callsAfterEnd)).toEqual([0]);

  const blocks = table.split("\n\n");
  const block = blocks.find((b) => b.startsWith(`run ${gone.run}`))!;
  expect(block).toContain("(gateway_gone)");
  expect(block).toMatch(AFTER_END);
  for (const b of blocks.filter((x) => x !== block)) expect(b).not.toContain("calls after its end");
}, 30_000);

it("ended as gone by a gateway whose client sent no request: that gateway's records are its own, not the run's", async () => {
  const { entries, gone, table } = await forgedEnd(async (project, stateDir) => {
    // `portcullis run` that launches its server (closing the gone gateway's call and run as it
    // starts), whose client sends nothing and closes its input
    const child = spawn(NODE, [CLI, "run", "--label", "inventory", "--", ...project.command], {
      cwd: project.dir,
      env: hostEnv({ ...project.env, PORTCULLIS_HOME: stateDir }),
      stdio: ["pipe", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    const exited = new Promise<number | null>((res) => child.on("close", (code) => res(code)));
    await waitFor(() => /serving .* epoch=/.test(stderr), 20_000, "the quiet gateway to serve");
    child.stdin.end();
    expect(await exited, stderr).toBe(0);
  });
  expect(gone.callsAfterEnd).toBe(2);
  expect(gone.epochs).toHaveLength(1); // its own gateway's one server process
  // the quiet gateway is listed as one without an agent run, its epoch its own
  const quiet = entries.filter((e) => e.run === null);
  expect(quiet).toHaveLength(1);
  expect(quiet[0]!.epochs).toHaveLength(1);
  expect(quiet[0]!.epochs).not.toEqual(gone.epochs);
  expect(table).toMatch(AFTER_END);
  expect(table).toMatch(
    /^gateway \S+ \(pid \d+\) {2}server inventory .* no agent run: its client sent no request$/m,
  );
}, 30_000);
