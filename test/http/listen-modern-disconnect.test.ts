// A 2026-07-28 client over Streamable HTTP cancels a request by closing its response stream and
// sends no notifications/cancelled (the v2 SDK aborts the POST; the standard says a server MUST
// take the disconnect as cancelling that request). A legacy client's dropped connection is not
// one (test/http/listen-resume.test.ts): it may resume. Raw sockets, so the test chooses when
// the stream closes.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents, decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { readJsonLines, removeDir, tempDir, waitFor } from "../helpers/files.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { startListener } from "./listen.js";
import { Connection, modernRequester } from "./pipeline.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const request = modernRequester("modern-disconnect");

describe("a modern-era client that closes a request's stream", () => {
  it("cancels it: a call it gave up on while it waited for a human never runs once approved", async () => {
    const dir = tempDir();
    cleanup.push(() => removeDir(dir));
    const record = join(dir, "calls.jsonl");
    const l = await startListener([NODE, FIXTURES.modern], {
      args: ["--approval-timeout", "60000"],
      env: { FIXTURE_RECORD: record },
    });
    cleanup.push(() => l.close());
    const ran = () =>
      existsSync(record) ? readJsonLines<{ args: { text: string } }>(record).map((r) => r.args.text) : [];
    const [a, b] = await Promise.all([Connection.open(l), Connection.open(l)]);
    cleanup.push(() => {
      a.close();
      b.close();
    });
    expect((await a.post(request(1, "server/discover"))).status).toBe(200);
    expect((await a.post(request(2, "tools/list"))).status).toBe(200);
    // the call waits for a human on its own connection; the client gives up: it closes it
    void b.post(request(3, "tools/call", { name: "echo", arguments: { text: "given up" } })).catch(() => {});
    // read in this process, no listing process: B's process is looked up at this first request of
    // its connection, and a child spawned meanwhile (not yet exec'd) holds B's socket too, so B
    // would not be identified and would get a run of its own, whose grant does not cover A's call
    // (test/http/hostile-peer-ambiguous.test.ts)
    const asked = await nextStoredRequest(l.stateDir);
    expect(asked.tool).toBe("echo");
    b.close();
    await waitFor(() => /the call stopped waiting/.test(l.stderr()), 10_000, "the wait to stop");
    // approved after all: for the session, so a call the client makes now runs at once
    await decideByCli(l.stateDir, "approve", asked.request, "--for", "session");
    const after = await a.post(
      request(4, "tools/call", { name: "echo", arguments: { text: "asked again" } }),
    );
    expect(after.status, after.body).toBe(200);
    expect(after.body).toContain("asked again");
    await new Promise((r) => setTimeout(r, 500));
    expect(ran()).toEqual(["asked again"]);
    // one call recorded, the one that ran
    const events = await auditEvents(l.stateDir);
    expect(events.filter((e) => e.type === "tool_called")).toHaveLength(1);
  });
});
