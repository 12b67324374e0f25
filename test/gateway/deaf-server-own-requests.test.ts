// A launched server that reads none of its stdin, and the requests the gateway makes of it on its
// own: a re-list of its catalog, and the client's subscriptions re-opened on a new process. Past
// the 4 MiB bound (STDIN_BACKLOG_BYTES, src/supervisor/workerPipes.ts) none is written: each
// would wait behind what the server does not read, in the gateway's memory (InFlight.request).
// Nor is what the client sends kept without bound behind the handshake replayed to a new process
// that never reads it. Real gateway, real fixture server (exhaust.mjs: `deaf {listChangedOn}`,
// `exit`, FIXTURE_DEAF_AFTER_LIST_IF, FIXTURE_DEAF_FROM_START_IF), a raw client on plain pipes.
//
// What failed before:
//   - a re-list of a deaf server wrote its tools/list and waited for it the page's whole timeout,
//     then failed as a server that does not answer ("did not answer tools/list"), and each retry
//     wrote another, with its notifications/cancelled, for as long as the process ran;
//   - subscriptions re-opened on a new process were decided together and all written whatever
//     waited: 24 of 1 MiB put 24 MiB in the stdin of a process that read none of it, each waiting
//     as long as the process lived, and the client was never told they were not open;
//   - what the client sent while a new process left its replayed handshake unread was all kept
//     in the gateway's memory for the handshake's 60 s, however much it was.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents } from "../helpers/approvals.js";
import { MIB, startExhaustGateway } from "../helpers/exhaustGateway.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";

const NOT_READING = /not reading the requests sent to it/;

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

function gateFile(): string {
  const dir = tempDir("portcullis-deaf-own-");
  cleanup.push(() => removeDir(dir));
  return join(dir, "gate");
}

describe("a server that reads none of its stdin, asked by the gateway itself", () => {
  it("is not sent a re-list past the bound: the catalog is unavailable at once, saying why, not after the page's timeout", async () => {
    const gate = gateFile();
    // a page timeout of 3 s: before, the re-list failed on it (the server never read the page)
    const g = startExhaustGateway(
      {
        label: "deaf",
        env: { PORTCULLIS_CATALOG_TIMEOUT_MS: "3000" },
        args: ["--hold-timeout", "1000"],
        stderr: "collected",
      },
      (end) => cleanup.push(end),
    );
    await g.init();
    expect(g.text(await g.call("deaf", "deaf", { listChangedOn: gate }))).toBe("deaf");
    // past the bound: six calls of 1 MiB it never reads (the sixth refused as not reading)
    const pad = "x".repeat(MIB);
    for (let i = 0; i < 6; i++)
      g.send({
        jsonrpc: "2.0",
        id: `c${i}`,
        method: "tools/call",
        params: { name: "echo", arguments: { tag: pad } },
      });
    // (each decided, then checked against the bound: the last is refused)
    expect((await g.answer("c5")).error?.message).toMatch(NOT_READING);
    // the server says its tools changed: the gateway re-lists it
    writeFileSync(gate, "");
    await waitFor(() => g.stderr().includes("cannot fetch the tool catalog:"), 20_000, "the failed re-list");
    const line = /cannot fetch the tool catalog: (.*)/.exec(g.stderr())?.[1];
    expect(line).toMatch(
      /^the server process is not reading its input: [\d.]+ MiB written to it wait to be read; tools\/list was not sent to it$/,
    );
    expect(g.stderr()).not.toMatch(/did not answer tools\/list/);
    // the client's list is refused saying why (a list is the next attempt: refused as it starts)
    g.send({ jsonrpc: "2.0", id: "list-after", method: "tools/list" });
    const refused = (await g.answer("list-after")).error;
    expect(refused?.data?.error).toBe("catalog_unavailable");
    expect((refused?.data as { catalogError?: string } | undefined)?.catalogError).toMatch(
      /not reading its input: .*tools\/list was not sent to it/,
    );
    await g.end();
  }, 60_000);

  it("is not re-opened past the bound the subscriptions a new process was to take: each refused is closed, and the client told", async () => {
    const deafIf = gateFile();
    const g = startExhaustGateway(
      {
        label: "deaf",
        env: { FIXTURE_DEAF_AFTER_LIST_IF: deafIf },
        args: ["--hold-timeout", "1000"],
        stderr: "collected",
      },
      (end) => cleanup.push(end),
    );
    await g.init();
    // 24 subscriptions of a 1 MiB uri, taken by the first process
    const pad = "x".repeat(MIB);
    const count = 24;
    const uri = (i: number) => `exhaust://doc?n=${i}&pad=${pad}`;
    // (one at a time: sent at once, they would pass the bound of a process that reads them all)
    for (let i = 0; i < count; i++) {
      g.send({ jsonrpc: "2.0", id: `s${i}`, method: "resources/subscribe", params: { uri: uri(i) } });
      expect(await g.answer(`s${i}`)).toMatchObject({ result: {} });
    }
    // the next process reads none of its stdin once it has listed its tools: the gateway re-opens
    // the 24 there, decided together once its catalog is in
    writeFileSync(deafIf, "");
    expect(g.text(await g.call("exit", "exit"))).toBe("exit");
    const updated = () =>
      (g.methods.get("notifications/resources/updated") ?? 0) >= count - 5 ? true : undefined;
    // before: none (all 24 were written, and the client never heard they were not open)
    await waitFor(updated, 30_000, "the client told of the subscriptions not re-opened");
    await waitFor(
      () =>
        g
          .stderr()
          .includes(
            "was not re-opened on the new server process: the server process is not reading its input",
          ),
      10_000,
      "the line saying why",
    );
    await g.end();
    const told = g.methods.get("notifications/resources/updated") ?? 0;
    expect(told).toBeLessThanOrEqual(count);
    // each re-open decided and recorded under the new epoch (the client's request id, as its
    // subscription was made); each refused closed there, never forwarded
    const events = await auditEvents(g.stateDir);
    const subscribes = events.filter(
      (e) => e.type === "request_forwarded" && e.method === "resources/subscribe",
    );
    const first = subscribes[0]?.epoch;
    const reopened = subscribes.filter((e) => e.epoch !== first);
    expect(reopened).toHaveLength(count);
    const closed = events.filter(
      (e) =>
        e.type === "call_interrupted" &&
        e.reason === "server_unavailable" &&
        e.method === "resources/subscribe",
    );
    expect(closed).toHaveLength(told);
    for (const e of closed) expect(e).toMatchObject({ outcome: "not_forwarded", epoch: reopened[0]?.epoch });
  }, 60_000);

  it("keeps at most the bound's worth of what the client sends while the handshake replayed to a new process goes unread; the rest is refused at once", async () => {
    const deafFromStart = gateFile();
    const g = startExhaustGateway(
      {
        label: "deaf",
        env: { FIXTURE_DEAF_FROM_START_IF: deafFromStart },
        args: ["--hold-timeout", "1000"],
        stderr: "collected",
      },
      (end) => cleanup.push(end),
    );
    await g.init();
    // the next process reads nothing: the initialize the gateway replays to it is never answered
    // (for 60 s, the handshake's timeout, then the connection ends)
    writeFileSync(deafFromStart, "");
    expect(g.text(await g.call("exit", "exit"))).toBe("exit");
    await waitFor(() => g.stderr().includes("reads nothing"), 20_000, "the new process up");
    await waitFor(() => g.stderr().includes("new execution epoch"), 20_000, "its epoch");
    // 8 pings of 1 MiB: they wait behind the handshake, in the gateway's memory
    const pad = "x".repeat(MIB);
    const count = 8;
    for (let i = 0; i < count; i++) g.send({ jsonrpc: "2.0", id: `p${i}`, method: "ping", params: { pad } });
    // before: kept, all of them, until the handshake's timeout (no answer within 20 s)
    const last = (await g.answer(`p${count - 1}`, 20_000)).error;
    expect(last?.message).toMatch(NOT_READING);
    expect((last?.data as { reason?: string } | undefined)?.reason).toMatch(
      /^the new server process has not answered the handshake replayed to it: [\d.]+ MiB sent by the client wait behind it$/,
    );
    // the client goes: what waited behind the handshake is answered then, never sent
    await g.end();
    const errors = [...Array(count).keys()].map((i) => g.answers.get(`p${i}`)?.error);
    const refused = errors.filter((e) => NOT_READING.test(e?.message ?? "")).length;
    const kept = errors.filter((e) => e?.data?.error === "identity_pending").length;
    expect(refused + kept).toBe(count);
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThanOrEqual(5);
  }, 60_000);
});
