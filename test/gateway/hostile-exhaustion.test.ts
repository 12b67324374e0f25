// Resource exhaustion, as a hostile server would try it: whatever one end
// does faster than the other takes, the gateway makes it wait (the pipes and the peer hold it),
// its own memory stays bounded, and it keeps answering. Real gateway, real fixture server
// (exhaust.mjs), a raw client on plain pipes; the gateway's memory is read from /proc (VmRSS).
//
// What failed before:
//   - a server's stderr flood while the host reads none of the gateway's stderr was taken whole
//     into the gateway's memory (64 MiB of lines: +190 MiB, 200 MiB: +600 MiB, without end);
//   - a server's requests to a client that answers none were all kept for their answers
//     (1,000,000 requests: +263 MiB, without end);
//   - the gateway's own warnings (one per junk line of a server) on a stderr nobody reads: all
//     kept (1,000,000 junk lines: +214 MiB, without end);
//   - a server that stops reading its stdin: every request the client sent after was kept for it
//     (250 MiB of calls: +330 MiB, without end).
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MIB, rssMiB, startExhaustGateway } from "../helpers/exhaustGateway.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { floodProgress, serverHeld } from "../helpers/flood.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** A gateway in front of the exhaust fixture, `args` added to its run flags; its stderr read by nobody unless a case does. */
function startGateway(env: Record<string, string> = {}, args: string[] = []) {
  return startExhaustGateway({ label: "ex", env, args, stderr: "left" }, (end) => cleanup.push(end));
}

describe("a hostile server", () => {
  it("floods its stderr while the host reads none of the gateway's: the server waits, not the gateway's memory; nothing is lost", async () => {
    const dir = tempDir("pc-exhaust-");
    cleanup.push(() => removeDir(dir));
    const progressFile = join(dir, "progress.json");
    const g = startGateway({ FIXTURE_PROGRESS: progressFile });
    // the host reads the gateway's stderr until the session is up, then no more
    let stderr = "";
    const onErr = (b: Buffer) => {
      stderr += b.toString();
    };
    g.gw.stderr.on("data", onErr);
    await g.init();
    await waitFor(() => /\[exhaust\] pid=/.test(stderr), 10_000, "the server's first stderr line");
    g.gw.stderr.off("data", onErr);
    g.gw.stderr.pause();
    const before = rssMiB(g.gw.pid!);

    // 32 MiB: 32 times what the gateway lets wait (1 MiB). With that bound lifted, the gateway
    // had taken 21 MiB of it when its memory was read (failing both checks below); 64 MiB, what
    // this sent before, proved no more
    const bytes = 32 * MIB;
    const line = 128;
    g.send({
      jsonrpc: "2.0",
      id: "flood",
      method: "tools/call",
      params: { name: "errflood", arguments: { bytes, line } },
    });
    // the server's stderr stops being taken, well short of the end (before: the gateway took it
    // all, and kept it for its own stderr)
    const held = await serverHeld(floodProgress(progressFile));
    expect(held.done).toBe(false);
    expect(held.written).toBeLessThan(bytes / 4);
    expect(rssMiB(g.gw.pid!) - before).toBeLessThan(32);
    // the gateway, and the server, still answer
    expect(g.text(await g.call("alive", "echo", { tag: "alive" }))).toBe("echo alive");

    // the host reads again: every line arrives, then the call's answer
    let count = 0;
    let rest = "";
    g.gw.stderr.on("data", (b: Buffer) => {
      const lines = (rest + b.toString()).split("\n");
      rest = lines.pop() ?? "";
      for (const l of lines) if (l.startsWith("[ex] eeee")) count++;
    });
    g.gw.stderr.resume();
    expect(g.text(await g.answer("flood", 60_000))).toBe("errflood");
    await waitFor(() => count === bytes / line, 30_000, "every stderr line");
  }, 90_000);

  it("sends requests without end to a client that answers none: a bounded number wait for the client, the rest are refused to the server at once", async () => {
    const dir = tempDir("pc-exhaust-");
    cleanup.push(() => removeDir(dir));
    const done = join(dir, "done");
    const g = startGateway({ FIXTURE_DONE: done });
    g.gw.stderr.resume();
    await g.init();
    const count = 20_000;
    expect(g.text(await g.call("ask", "ask", { count }))).toBe(`asked ${count}`);
    await waitFor(
      () => existsSync(done) && readFileSync(done, "utf8").includes(`ask ${count}\n`),
      30_000,
      "the server's last request",
    );
    // the gateway read everything the server wrote before this answer
    const relayed = await waitFor(
      async () => {
        const n = g.requests.length;
        const stats = g.text(await g.call(`answers-${n}`, "answers"));
        return stats === `answers 0 errors ${count - n}` ? n : undefined;
      },
      30_000,
      "the server's requests relayed or refused",
    );
    // before: all 20,000 were relayed, and kept, each, until an answer that never comes
    expect(relayed).toBeGreaterThan(0);
    expect(relayed).toBeLessThan(count);
    expect(readFileSync(done, "utf8")).toMatch(
      /error Too many requests of yours wait for the client's answer/,
    );

    // the client answers them: the server may ask again, and its requests reach the client
    for (const r of g.requests) g.send({ jsonrpc: "2.0", id: r.id, result: { roots: [] } });
    await waitFor(
      async () =>
        g.text(await g.call(`after-${Math.random()}`, "answers")) ===
        `answers ${relayed} errors ${count - relayed}`,
      30_000,
      "the client's answers at the server",
    );
    expect(g.text(await g.call("ask-again", "ask", { count: 10 }))).toBe("asked 10");
    await waitFor(() => g.requests.length === relayed + 10, 30_000, "the 10 new requests at the client");
  }, 90_000);
});

describe("a hostile server's junk, warned about on a stderr the host does not read", () => {
  it("the gateway's own warnings do not pile up in its memory: past a bound they are dropped, and it says how many once read again", async () => {
    const dir = tempDir("pc-exhaust-");
    cleanup.push(() => removeDir(dir));
    const done = join(dir, "done");
    // with the debug log on: a line for every message the server writes (the warnings about a
    // server's junk are said once a minute with a count, src/util/sparingWarnings.ts, so they no
    // longer reach the bound by themselves; the bound holds for every line of the log)
    const g = startGateway({ FIXTURE_DONE: done, PORTCULLIS_DEBUG: "1" });
    let stderr = "";
    const onErr = (b: Buffer) => {
      stderr += b.toString();
    };
    g.gw.stderr.on("data", onErr);
    await g.init();
    await waitFor(() => /\[exhaust\] pid=/.test(stderr), 10_000, "the server's first stderr line");
    g.gw.stderr.off("data", onErr);
    g.gw.stderr.pause();
    const before = rssMiB(g.gw.pid!);

    // 400,000 answers under ids nobody asked with: a debug line each (about 250 bytes), 100 MB
    // against the log's 4 MiB bound; kept, they grew the gateway by about 87 MiB (130 for 600,000),
    // twice the bound asserted below
    const count = 400_000;
    expect(g.text(await g.call("junk", "junk", { count }))).toBe("junk");
    await waitFor(
      () => existsSync(done) && readFileSync(done, "utf8").includes(`junk ${count}\n`),
      60_000,
      "the server's last junk line",
    );
    // read behind the junk: every warning was made by now
    expect(g.text(await g.call("alive", "echo", { tag: "alive" }))).toBe("echo alive");
    // before: every warning waited in the gateway's memory for a reader (+130 MiB for 600,000)
    expect(rssMiB(g.gw.pid!) - before).toBeLessThan(48);

    // the host reads again: the gateway says what it dropped
    let seen = "";
    g.gw.stderr.on("data", (b: Buffer) => {
      seen = (seen + b.toString()).slice(-4096);
    });
    g.gw.stderr.resume();
    // at its next line once what waited was read (one more junk line: one more warning)
    let n = 0;
    await waitFor(
      async () => {
        await g.call(`more-${n++}`, "junk", { count: 1 });
        await new Promise((r) => setTimeout(r, 100));
        return /warning: \d+ lines of the gateway's log were dropped: its stderr was not read/.test(seen);
      },
      30_000,
      "the dropped lines told",
    );
  }, 90_000);

  it("notifications it may not send, by the thousand, are warned about once, not a line each", async () => {
    const dir = tempDir("pc-exhaust-");
    cleanup.push(() => removeDir(dir));
    const done = join(dir, "done");
    const g = startGateway({ FIXTURE_DONE: done });
    let stderr = "";
    g.gw.stderr.on("data", (b: Buffer) => {
      stderr += b.toString();
    });
    await g.init();
    const count = 5_000;
    expect(g.text(await g.call("junk", "junk", { count, positional: true }))).toBe("junk");
    await waitFor(
      () => existsSync(done) && readFileSync(done, "utf8").includes(`junk ${count}\n`),
      30_000,
      "the server's last notification",
    );
    // read behind them: every one was dropped by now
    expect(g.text(await g.call("alive", "echo", { tag: "alive" }))).toBe("echo alive");
    // before: one line for each (5,000 lines of the host's log, written by the server's will)
    expect(stderr.match(/its params are by position/g)).toHaveLength(1);
  }, 60_000);

  it("stops reading its stdin: requests are refused, not kept for it, and the gateway still ends when the client goes", async () => {
    // The calls written to the server before it was refused more are never answered: a client
    // that ends its input gets the answers it asked for within the hold timeout (15 s by default,
    // which this case spent waiting), then the gateway ends. 1 s of it is enough here: what is
    // proven is that the gateway ends at all, having read the client's end behind 400 calls.
    const g = startGateway({}, ["--hold-timeout", "1000"]);
    g.gw.stderr.resume();
    await g.init();
    expect(g.text(await g.call("deaf", "deaf"))).toBe("deaf");
    const before = rssMiB(g.gw.pid!);
    // 400 calls of 64 KiB (25 MiB): before, every one was written to the server's stdin and kept
    // in the gateway's memory behind the others; now the server gets no more once 4 MiB wait
    const pad = "x".repeat(64 * 1024);
    for (let i = 0; i < 400; i++)
      g.send({
        jsonrpc: "2.0",
        id: `c${i}`,
        method: "tools/call",
        params: { name: "echo", arguments: { tag: pad } },
      });
    const last = await g.answer("c399");
    expect(last.error?.message).toMatch(/not reading the requests sent to it/);
    expect((last.error as { data?: { error?: string } } | undefined)?.data?.error).toBe("server_unavailable");
    // a request the gateway only relays is answered as well, not queued
    g.send({ jsonrpc: "2.0", id: "ping", method: "ping" });
    expect((await g.answer("ping")).error?.message).toMatch(/not reading/);
    expect(rssMiB(g.gw.pid!) - before).toBeLessThan(40);
    // the client goes: the gateway ends (it never stopped reading the client)
    const exited = new Promise<number | null>((resolve) => g.gw.once("exit", (code) => resolve(code)));
    g.gw.stdin.end();
    await exited;
  }, 90_000);
});
