// A client that already has a session sends initialize again (declaring more capabilities, here
// URL-mode elicitation), and no server agrees to it. Lost with its process: it is answered as the
// first lost initialize is (epoch_transition, "send initialize again"), not with a call's advice
// ("check whether the call took effect"). Lost or refused: the gateway acts on the capabilities
// of the initialize a server answered, never on those the client only asked for, so a call that
// waits for a human sends no elicitation/create to the console. Real gateway, real processes.
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { consoleAddressPath, writeConsoleAddress } from "../../src/console/address.js";
import { decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { loggedMethod, removeDir, tempDir } from "../helpers/files.js";
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

/** A call that waits for a human is decided by the CLI; the client was never sent to the console. */
async function callNeverElicits(peer: RawGateway, id: string): Promise<void> {
  peer.send({
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: { name: "echo", arguments: { message: "x" } },
  });
  const req = await nextStoredRequest(peer.stateDir);
  await decideByCli(peer.stateDir, "approve", req.request);
  const answer = await peer.next((m) => m.id === id && m.method === undefined, 30_000);
  expect(answer.result, `${JSON.stringify(answer)}\n${peer.stderr()}`).toBeDefined();
  expect(peer.messages().filter((m) => m.method === "elicitation/create")).toEqual([]);
  expect(peer.stderr()).not.toMatch(/asked the client to open the console page/);
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
    const held = await loggedMethod(
      methods,
      "held initialize",
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

    // the session goes on (the handshake a server answered, replayed to the next process), under
    // the capabilities that handshake declared: none
    const list = await peer.request("tools/list", undefined, 30_000);
    expect(list.result, `${JSON.stringify(list)}\n${peer.stderr()}`).toMatchObject({
      tools: expect.any(Array),
    });
    await callNeverElicits(peer, "call-after-lost");
  }, 90_000);

  it("refused by the server: the gateway does not act on the capabilities it declared", async () => {
    const dir = tempDir("portcullis-reinit-refused-");
    cleanup.push(() => removeDir(dir));
    const refuse = join(dir, "refuse");
    const peer = gatewayWithConsole({ FIXTURE_INIT_REFUSE: refuse });
    const first = await peer.initialize({}, 20_000);
    expect(first.result, JSON.stringify(first)).toBeDefined();
    await peer.request("tools/list", undefined, 20_000);

    writeFileSync(refuse, "");
    const again = await peer.request("initialize", AGAIN, 20_000);
    expect(again.error, JSON.stringify(again)).toBeDefined();
    rmSync(refuse);
    await callNeverElicits(peer, "call-after-refused");
  }, 90_000);
});
