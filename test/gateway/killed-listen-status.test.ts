import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { canChoosePids, sleeperUnder } from "../helpers/pids.js";
import { startListener } from "../http/listen.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

it.skipIf(!canChoosePids())(
  "a SIGKILLed run --listen is not shown listening by `status` once its pid belongs to another process",
  async () => {
    const front = await startListener([NODE, FIXTURES.echo], { label: "front" });
    cleanup.push(() => front.close());
    const pid = front.proc.pid!;
    const before = JSON.parse((await runCli(["status", "--json", "--state-dir", front.stateDir])).stdout);
    expect(before.listening.map((l: { pid: number }) => l.pid)).toEqual([pid]);

    front.proc.kill("SIGKILL");
    await new Promise((resolve) =>
      front.proc.exitCode !== null || front.proc.signalCode !== null
        ? resolve(null)
        : front.proc.once("exit", resolve),
    );
    // the address file is still there: a SIGKILL removes nothing
    expect(readdirSync(join(front.stateDir, "listen")).filter((n) => n.endsWith(".json"))).toEqual([
      `front.${pid}.json`,
    ]);
    // right after the kill, status is right
    const dead = JSON.parse((await runCli(["status", "--json", "--state-dir", front.stateDir])).stdout);
    expect(dead.listening).toEqual([]);

    // the pid is taken by an unrelated process
    expect(
      sleeperUnder(pid, (end) => cleanup.push(end)),
      "could not get the dead gateway's pid for another process",
    ).toBe(pid);
    const status = await runCli(["status", "--json", "--state-dir", front.stateDir]);
    expect(status.code).toBe(0);
    const shown = JSON.parse(status.stdout) as { gateways: { pid: number }[]; listening: { pid: number }[] };
    // the gateways rows are judged by pid and start time: the dead gateway is not listed
    expect(shown.gateways.filter((g) => g.pid === pid)).toEqual([]);
    // nor may its front be
    expect(shown.listening).toEqual([]);
    const text = await runCli(["status", "--state-dir", front.stateDir]);
    expect(text.stdout).not.toMatch(/listening on/);
    expect(existsSync(join(front.stateDir, "listen"))).toBe(true);
  },
  20_000,
);
