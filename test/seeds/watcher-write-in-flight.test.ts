// Seed 000, "Les appels en cours exigent une règle ferme" and the failure tests developers forget:
// "Un redémarrage survient alors qu'un appel d'écriture attend une réponse", here through the
// mechanism the seed calls the harder case: a watcher that owns the stdio pipe and swaps its
// child behind it (nodemon-like, test/fixtures/servers/watcher.mjs), so the client's connection
// never closes. The write that was waiting must be answered with an error naming the epoch
// transition, and must not be retried against the new child.
// Real gateway, revisioned fixture rebuilt between revisions, real watcher process.
import { afterEach, describe, expect, it } from "vitest";
import { verifiedAuditEvents } from "../helpers/approvals.js";
import { waitFor } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { makeProject } from "../helpers/project.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

function refusal(e: unknown) {
  return e as { code: number; data: Record<string, unknown> };
}

describe("seed 000: a watcher restarts the worker while a write waits for its answer", () => {
  it.each([
    ["relaying, replaying initialize", ["--replay-initialize"]],
    ["children on the pipe itself (as node --watch)", ["--inherit-stdio"]],
  ])(
    "%s: the write gets epoch_transition, ran once, and is never retried on the new code",
    async (_, mode) => {
      const project = makeProject("B");
      cleanup.push(() => project.cleanup());
      const stateDir = newStateDir();
      const gw = await startGateway({
        args: [
          "--label",
          "inventory",
          "--approval",
          "none",
          "--",
          NODE,
          FIXTURES.watcher,
          "--watch",
          "dist/server.js",
          ...mode,
          "--",
          NODE,
          "dist/server.js",
        ],
        cwd: project.dir,
        env: { ...project.env, PORTCULLIS_SHUTDOWN_GRACE_MS: "300" },
        stateDir,
      });
      cleanup.push(() => gw.close());
      await gw.client.listTools();
      const epochA = JSON.parse((await runCli(["status", "--json"], { stateDir })).stdout).gateways[0].epoch;

      const pending = gw.client
        .callTool({ name: "slow_write", arguments: { note: "pay invoice 42" } }, undefined, {
          timeout: 40_000,
        })
        .catch((e) => e);
      await waitFor(() => project.counter() === 1, 10_000, "slow_write to reach the server");
      project.rebuild("C"); // same tool list, new handler: the watcher swaps its child

      const err = refusal(await pending);
      expect(err.code).toBe(-32054);
      expect(err.data).toMatchObject({ error: "epoch_transition", retried: false, requestEpoch: epochA });
      // the new code is up and answers; the write was not sent to it
      const answer = await waitFor(
        async () => {
          const r = await gw.client.callTool({ name: "read_status", arguments: {} }).catch(() => null);
          const t = r ? (r.content as { text: string }[])[0]!.text : "";
          return t.includes('"revision":"C"') ? t : null;
        },
        15_000,
        "an answer from revision C",
      );
      expect(answer).toContain('"revision":"C"');
      project.release();
      expect(project.counter()).toBe(1);
      const writes = project.records().filter((r) => r.tool === "slow_write");
      expect(writes.map((r) => r.revision)).toEqual(["B"]);

      await gw.close();
      const events = await verifiedAuditEvents(stateDir);
      const called = events.filter((e) => e.type === "tool_called" && e.tool === "slow_write");
      expect(called).toHaveLength(1);
      const interrupted = events.filter((e) => e.type === "call_interrupted");
      expect(interrupted).toEqual([expect.objectContaining({ reason: "epoch_transition", epoch: epochA })]);
      const replaced = events.filter((e) => e.type === "server_replaced");
      expect(replaced).toEqual([expect.objectContaining({ oldEpoch: epochA })]);
    },
  );
});
