// Step 1 of the decision after an epoch change: a call (and a list) sent while the new epoch's
// catalog is being fetched is held, never forwarded, and once the hold timeout passes it is
// answered identity_pending, worded as a change (an epoch came before this one) and naming the
// new epoch (docs/design.md, "The decision order of a tools/call"; docs/refusals.md, -32053).
// lifecycle.test.ts covers the first epoch's wording. Real gateway over real pipes, raw client,
// the rawlines fixture: FIXTURE_RAW_ANSWERS_FILE, read at each request, leaves the next
// process's tools/list unanswered.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { completeLines, wholeLines } from "../helpers/completeLines.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const TOOLS = '[{"name":"adjust","inputSchema":{"type":"object"}}]';

/** The tools/call lines the server processes received (every process appends to one log). */
function callsReceived(log: string): string[] {
  return completeLines(readFileSync(log, "utf8"))
    .filter(Boolean)
    .map((l) => JSON.parse(l) as string)
    .filter((l) => l.includes('"tools/call"'));
}

describe("a call held for a new epoch's catalog", () => {
  it("is answered identity_pending at the hold timeout, worded as an epoch change and naming the new epoch; nothing reaches the server", async () => {
    const dir = tempDir("portcullis-held-timeout-");
    const answers = join(dir, "answers.json");
    const log = join(dir, "raw.log");
    writeFileSync(answers, "{}");
    const gw = rawGateway({
      args: [
        "--label",
        "held",
        "--approval",
        "none",
        "--hold-timeout",
        "1500",
        "--",
        NODE,
        FIXTURES.rawlines,
      ],
      env: {
        FIXTURE_RAW_TOOLS: TOOLS,
        FIXTURE_RAW_ANSWERS_FILE: answers,
        FIXTURE_RAW_LOG: log,
        PORTCULLIS_RESPAWN_BACKOFF_MS: "20",
      },
    });
    cleanup.push(
      () => gw.close(),
      () => removeDir(dir),
    );
    expect((await gw.initialize(undefined, 20_000)).error).toBeUndefined();
    expect((await gw.request("tools/list", {}, 20_000)).error).toBeUndefined();
    expect((await gw.request("tools/call", { name: "adjust", arguments: {} }, 20_000)).error).toBeUndefined();
    expect(callsReceived(log)).toHaveLength(1);
    // waited for in a line written whole: stderr is another pipe than the answers, read at its own
    // pace, and a chunk can end inside the pid or the epoch
    const first = await waitFor(
      () => /serving .*: pid=(\d+) epoch=(\w+)/.exec(wholeLines(gw.stderr())) ?? undefined,
      20_000,
      "the serving line",
    );
    expect(first, gw.stderr()).not.toBeNull();

    // the next process never answers tools/list: its epoch stays identity-pending
    writeFileSync(answers, JSON.stringify({ "tools/list": null }));
    process.kill(Number(first![1]), "SIGKILL");
    const NEW_EPOCH = /new execution epoch: .* epoch=(\w+) \(was (\w+); /;
    const [, epoch, was] = await waitFor(
      () => NEW_EPOCH.exec(gw.stderr()) ?? undefined,
      20_000,
      "the new epoch",
    );
    expect(was).toBe(first![2]);
    expect(epoch).not.toBe(was);

    const [call, list] = await Promise.all([
      gw.request("tools/call", { name: "adjust", arguments: {} }, 20_000),
      gw.request("tools/list", {}, 20_000),
    ]);
    for (const answer of [call, list]) {
      expect(answer.error, JSON.stringify(answer)).toMatchObject({
        code: -32053,
        message:
          "The server's new execution epoch is not verified yet; its tool catalog is still being fetched.",
        data: {
          error: "identity_pending",
          reason: "server execution epoch changed and its catalog is not known yet",
          retry: "wait a moment, then list tools again and retry",
          currentEpoch: epoch,
        },
      });
    }
    // held, never forwarded: the server received the first call only
    expect(callsReceived(log)).toHaveLength(1);
  });
});
