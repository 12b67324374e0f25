// Whether a call waits on a pending approval request right now, as `portcullis approvals` (text
// and --json) says it, from what the gateway records: a raw client calls a guarded tool of the
// catalog fixture, then cancels it (notifications/cancelled); the request stays pending for a
// retry, and the listing must no longer say a call waits on it (before, it said only `pending`
// with its gateway alive, as when a call waits). The retry of the same call joins the request,
// and a call waits on it again. A call whose hold ends (approval_timeout) leaves it so too. A row
// a gateway of an older portcullis wrote (no such record) is said to be not known, never waiting.
import { spawn } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { openStore, openStoreToRead } from "../../src/store/db.js";
import { nextStoredRequest } from "../helpers/approvals.js";
import { deployGateway } from "../helpers/deployGateway.js";
import { waitFor } from "../helpers/files.js";
import { hostEnv, runCli } from "../helpers/gateway.js";
import { CLI, NODE } from "../helpers/paths.js";
import type { RawGateway } from "../helpers/raw.js";
import { passphraseEnv } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

interface Listed {
  request: string;
  waiting: boolean;
  callWaiting: boolean | null;
  callWaitingSince: string | null;
  callLeft: { at: string; how: string } | null;
}

function guarded(mode: "session" | "per-call", holdMs: number): Promise<RawGateway> {
  return deployGateway(mode, holdMs, cleanup, ["--request-ttl", "600000"]);
}

function call(gw: RawGateway, id: string): void {
  gw.send({
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: { name: "deploy", arguments: { note: "ship it" } },
  });
}

/** `portcullis approvals --json`: the one pending request. */
async function listed(stateDir: string): Promise<Listed> {
  const r = await runCli(["approvals", "--json", "--state-dir", stateDir]);
  expect(r.code, r.stderr).toBe(0);
  const { requests } = JSON.parse(r.stdout) as { requests: Listed[] };
  expect(requests).toHaveLength(1);
  return requests[0]!;
}

/** `portcullis approvals` as text. */
async function listedText(stateDir: string): Promise<string> {
  const r = await runCli(["approvals", "--state-dir", stateDir]);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout;
}

/** Waits until the request's row says `wait` of its calls (read in this process, writing nothing). */
async function rowSays(stateDir: string, request: string, wait: string): Promise<void> {
  await waitFor(
    () => {
      const db = openStoreToRead(stateDir);
      try {
        const row = db.prepare("SELECT call_wait FROM approval_requests WHERE request = ?").get(request) as {
          call_wait: string | null;
        };
        return row.call_wait === wait || null;
      } finally {
        db.close();
      }
    },
    20_000,
    `the request's row to say ${wait}`,
  );
}

/** `portcullis approvals --watch --json` running: its lines so far. */
function watchJson(stateDir: string): () => Record<string, unknown>[] {
  const child = spawn(NODE, [CLI, "approvals", "--watch", "--json", "--state-dir", stateDir], {
    env: hostEnv(),
    stdio: ["ignore", "pipe", "ignore"],
  });
  let out = "";
  child.stdout.on("data", (c: Buffer) => {
    out += c.toString();
  });
  cleanup.push(() => {
    if (child.exitCode === null) child.kill("SIGKILL");
  });
  return () =>
    out
      .split("\n")
      .filter((l) => l.trim() !== "")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
}

// (with its date when the run crosses midnight UTC: callWaitText)
const CLOCK = /(?:\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d UTC/;

describe("approvals says whether a call waits on each pending request", () => {
  it("a call the client cancelled leaves its request waited on by no call; the same call again waits on it again", async () => {
    const gw = await guarded("session", 600_000);
    call(gw, "first");
    const { request } = await nextStoredRequest(gw.stateDir);

    const waited = await listed(gw.stateDir);
    expect(waited).toMatchObject({ request, waiting: true, callWaiting: true, callLeft: null });
    expect(Date.parse(waited.callWaitingSince!)).not.toBeNaN();
    expect(await listedText(gw.stateDir)).toMatch(
      new RegExp(`call {7}a call waits on it \\(since ${CLOCK.source}\\)`),
    );
    const watched = watchJson(gw.stateDir);
    await waitFor(() => watched().length > 0 || null, 20_000, "the watcher's pending line");
    expect(watched()).toMatchObject([{ change: "pending", request: { request, callWaiting: true } }]);

    gw.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "first" } });
    await waitFor(
      () => gw.stderr().includes(`approval request ${request} stays pending for a retry`) || null,
      20_000,
      "the gateway to leave the request pending",
    );
    await rowSays(gw.stateDir, request, "cancelled");
    const left = await listed(gw.stateDir);
    // still pending, its gateway alive: what `waiting` said before, and all it said
    expect(left).toMatchObject({ request, waiting: true, callWaiting: false, callWaitingSince: null });
    expect(left.callLeft?.how).toBe("cancelled");
    expect(Date.parse(left.callLeft!.at)).toBeGreaterThanOrEqual(Date.parse(waited.callWaitingSince!));
    const text = await listedText(gw.stateDir);
    expect(text).toMatch(
      new RegExp(
        `call {7}no call waits on it \\(the client cancelled its call at ${CLOCK.source}\\); approving it for the session still covers this run's later calls of the tool`,
      ),
    );
    expect(text).not.toContain("a call waits on it");
    // the watcher tells of it as a change of the request it listed
    await waitFor(() => watched().length > 1 || null, 20_000, "the watcher's call line");
    expect(watched()[1]).toEqual({
      change: "call",
      request,
      callWaiting: false,
      callWaitingSince: null,
      callLeft: left.callLeft,
    });

    // the agent calls again with the same arguments: it joins the request and waits on it
    call(gw, "again");
    await waitFor(
      () => gw.stderr().includes(`joins approval request ${request}`) || null,
      20_000,
      "the retry to join the request",
    );
    await rowSays(gw.stateDir, request, "waiting");
    const again = await listed(gw.stateDir);
    expect(again).toMatchObject({ request, callWaiting: true, callLeft: null });
    expect(Date.parse(again.callWaitingSince!)).toBeGreaterThanOrEqual(Date.parse(left.callLeft!.at));
    await waitFor(() => watched().length > 2 || null, 20_000, "the watcher's second call line");
    expect(watched()[2]).toMatchObject({ change: "call", request, callWaiting: true, callLeft: null });

    // `approve ID` shows the same line in the review it asks the passphrase for; the waiting call proceeds
    const approved = await runCli(["approve", request, "--for", "session", "--state-dir", gw.stateDir], {
      env: passphraseEnv(),
    });
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout).toMatch(new RegExp(`call {7}a call waits on it \\(since ${CLOCK.source}\\)`));
    expect((await gw.next((m) => m.id === "again", 20_000)).result).toBeDefined();
  });

  it("a per-call request whose call's hold ended is waited on by no call: a decision serves only a retry", async () => {
    const gw = await guarded("per-call", 300);
    call(gw, "held");
    const answer = await gw.next((m) => m.id === "held", 20_000);
    expect((answer.error?.data as { error?: string } | undefined)?.error).toBe("approval_timeout");
    const { request } = await nextStoredRequest(gw.stateDir);
    await rowSays(gw.stateDir, request, "hold-ended");
    const left = await listed(gw.stateDir);
    expect(left).toMatchObject({ request, waiting: true, callWaiting: false });
    expect(left.callLeft?.how).toBe("hold-ended");
    expect(await listedText(gw.stateDir)).toMatch(
      new RegExp(
        `no call waits on it \\(its call's wait ran out at ${CLOCK.source}, and the agent was told to retry it\\); a decision serves only a retry of this same call`,
      ),
    );
  });

  it("a row that records nothing of its calls (as a gateway of an older portcullis writes it) is not known, never said to be waited on", async () => {
    const gw = await guarded("session", 600_000);
    call(gw, "first");
    const { request } = await nextStoredRequest(gw.stateDir);
    // what an older gateway's INSERT leaves in the columns it does not know
    const db = openStore(gw.stateDir);
    try {
      db.prepare("UPDATE approval_requests SET call_wait = NULL, call_wait_at = NULL WHERE request = ?").run(
        request,
      );
    } finally {
      db.close();
    }
    expect(await listed(gw.stateDir)).toMatchObject({
      request,
      waiting: true,
      callWaiting: null,
      callWaitingSince: null,
      callLeft: null,
    });
    const text = await listedText(gw.stateDir);
    expect(text).toContain(
      "whether a call waits on it is not recorded (its gateway runs an older portcullis)",
    );
    expect(text).not.toContain("a call waits on it (");
  });
});
