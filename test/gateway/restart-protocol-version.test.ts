// A restart that negotiates another protocol version ends the client connection, as one that
// negotiates other capabilities does (test/gateway/lifecycle.test.ts): a negotiated session is
// never edited in place (docs/design.md, "Server states"). The capabilities stay the same here,
// so only the version can end it. Real gateway over real pipes, raw client, the rawlines fixture
// (FIXTURE_RAW_ANSWERS_FILE: its initialize answer, read at each request, so that the next process
// answers otherwise).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";
import { servingPid } from "../helpers/serving.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const INIT = {
  protocolVersion: "2025-11-25",
  capabilities: {},
  clientInfo: { name: "restart-version", version: "1" },
};

/** An initialize answer of `version`, with the same capabilities each time. */
function initAnswer(version: string): string {
  return `{"jsonrpc":"2.0","id":ID,"result":{"protocolVersion":"${version}","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"x","version":"1"}}}`;
}

function start(version: string): { gw: RawGateway; answerWith: (version: string) => void } {
  const dir = tempDir("portcullis-restart-version-");
  const file = join(dir, "answers.json");
  const answerWith = (v: string) => writeFileSync(file, JSON.stringify({ initialize: initAnswer(v) }));
  answerWith(version);
  const gw = rawGateway({
    args: ["--label", "versioned", "--approval", "none", "--", NODE, FIXTURES.rawlines],
    env: { FIXTURE_RAW_ANSWERS_FILE: file, PORTCULLIS_RESPAWN_BACKOFF_MS: "20" },
  });
  cleanup.push(
    () => gw.close(),
    () => removeDir(dir),
  );
  return { gw, answerWith };
}

/** Kills the server process the gateway serves and waits until another one serves (or the gateway ends). */
async function respawned(gw: RawGateway): Promise<void> {
  const before = servingPid(gw);
  process.kill(before, "SIGKILL");
  await waitFor(
    () => (servingPid(gw) !== before || /ending the connection/.test(gw.stderr()) ? true : undefined),
    20_000,
    "the next server process",
  );
}

describe("a new server process's handshake", () => {
  it("the same protocol version keeps the session; another one, with the same capabilities, ends the connection", async () => {
    const { gw, answerWith } = start("2025-11-25");
    expect((await gw.initialize(INIT, 20_000)).error).toBeUndefined();
    expect((await gw.request("tools/list", {}, 20_000)).error).toBeUndefined();

    // the same answer from the next process: the session goes on
    await respawned(gw);
    expect((await gw.request("tools/list", {}, 20_000)).error, gw.stderr()).toBeUndefined();

    // another protocol version, the capabilities unchanged: the connection ends so the client re-initializes
    answerWith("2025-06-18");
    await respawned(gw);
    await waitFor(
      () => /negotiated a different protocol version or capabilities/.test(gw.stderr()) || undefined,
      20_000,
      "the connection ended",
    );
    expect((await gw.exited).code, gw.stderr()).toBe(0);
  });
});
