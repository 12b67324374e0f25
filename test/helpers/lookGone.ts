// A running gateway made to look gone by a same-user process that edits the store: what the
// forged-gone tests (test/store/forged-gone-*.test.ts) start from.
import { openStore } from "../../src/store/db.js";
import { waitFor } from "./files.js";
import { startInventory } from "./gateway.js";
import { makeProject } from "./project.js";
import { newStateDir } from "./state.js";

/**
 * An inventory gateway (`--approval none`) with a slow_write held at its server: `answer` is that
 * call's answer, once the project is released; everything started is ended by the functions pushed
 * on `cleanup`.
 */
export async function liveGatewayWithSlowWrite(cleanup: (() => Promise<void> | void)[]) {
  const project = makeProject("A");
  const stateDir = newStateDir();
  cleanup.push(() => project.cleanup());
  const live = await startInventory(project, ["--approval", "none"], { stateDir });
  cleanup.push(() => live.close());
  await live.client.listTools();
  const answer = live.client.callTool({ name: "slow_write", arguments: {} }, undefined, { timeout: 60_000 });
  await waitFor(() => project.counter() === 1, 15_000, "slow_write to reach the server");
  return { project, stateDir, live, answer };
}

/**
 * liveGatewayWithSlowWrite, whose `gateways` and `runs` rows are then edited so that every column
 * a reader judges its liveness by says it is gone (another boot, another pid, its row ended).
 */
export async function liveGatewayMadeToLookGone(cleanup: (() => Promise<void> | void)[]) {
  const held = await liveGatewayWithSlowWrite(cleanup);
  const db = openStore(held.stateDir);
  db.prepare(
    "UPDATE gateways SET boot = 'another-boot', pid = 999999, ended_at = '2000-01-01T00:00:00.000Z' WHERE pid = ?",
  ).run(held.live.pid);
  db.prepare("UPDATE runs SET gateway_boot = 'another-boot', gateway_pid = 999999 WHERE gateway_pid = ?").run(
    held.live.pid,
  );
  db.close();
  return held;
}
