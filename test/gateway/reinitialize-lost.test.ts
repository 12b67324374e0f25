// A client that already has a session sends initialize again, and its process goes away holding
// it: it is answered as the first lost initialize is (epoch_transition, "send initialize again"),
// not with a call's advice ("check whether the call took effect"). Real gateway, real processes.
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { consoleAddressPath, writeConsoleAddress } from "../../src/console/address.js";
import { readJsonLines, removeDir, tempDir, waitFor } from "../helpers/files.js";
import { fixtureCommand } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const URL_ELICITATION = { elicitation: { url: {} } };
const AGAIN = {
  protocolVersion: "2025-11-25",
  capabilities: URL_ELICITATION,
  clientInfo: { name: "raw", version: "1" },
};

/** A gateway under `--approval session` whose console runs (its address written), on the lenient fixture. */
function gatewayWithConsole(env: Record<string, string>): RawGateway {
  const stateDir = newStateDir();
  writeConsoleAddress(stateDir, "http://127.0.0.1:45997");
  cleanup.push(() => rmSync(consoleAddressPath(stateDir), { force: true }));
  const peer = rawGateway({
    args: [
      "--label",
      "reinit",
      "--approval",
      "session",
      "--approval-timeout",
      "60000",
      "--",
      ...fixtureCommand("lenient"),
    ],
    env: { PORTCULLIS_RESPAWN_BACKOFF_MS: "50", ...env },
    stateDir,
  });
  cleanup.push(() => peer.close());
  return peer;
}

describe("a negotiated client's initialize sent again, that no server agrees to", () => {
  it("lost with its process: answered as a lost initialize (send initialize again); the session goes on under what was negotiated", async () => {
    const dir = tempDir("portcullis-reinit-lost-");
    cleanup.push(() => removeDir(dir));
    const hold = join(dir, "hold");
    const methods = join(dir, "methods.jsonl");
    const peer = gatewayWithConsole({ FIXTURE_INIT_HOLD: hold, FIXTURE_METHOD_LOG: methods });
    const first = await peer.initialize({}, 20_000);
    expect(first.result, JSON.stringify(first)).toBeDefined();
    await peer.request("tools/list", undefined, 20_000);

    writeFileSync(hold, ""); // the process holds the initialize sent again, unanswered
    peer.send({ jsonrpc: "2.0", id: "again", method: "initialize", params: AGAIN });
    const held = await waitFor(
      () =>
        (existsSync(methods) &&
          readJsonLines<{ method: string; pid: number }>(methods).find(
            (m) => m.method === "held initialize",
          )) ||
        undefined,
      20_000,
      "the process holding the initialize sent again",
    );
    rmSync(hold); // the next process answers the handshake replayed to it
    process.kill(held.pid, "SIGKILL");
    const lost = await peer.next((m) => m.id === "again", 30_000);
    expect(lost.error, `${JSON.stringify(lost)}\n${peer.stderr()}`).toMatchObject({
      code: -32054,
      data: {
        error: "epoch_transition",
        retried: false,
        reason: "server execution epoch changed while initialize was in flight",
      },
    });
    const data = lost.error as { message: string; data: { retry: string } };
    expect(data.data.retry).toMatch(/send initialize again/);
    expect(data.message).not.toMatch(/nothing was negotiated/);

    // the session goes on: the handshake a server answered, replayed to the next process
    const list = await peer.request("tools/list", undefined, 30_000);
    expect(list.result, `${JSON.stringify(list)}\n${peer.stderr()}`).toMatchObject({
      tools: expect.any(Array),
    });
  }, 90_000);
});
