// `run LABEL` with "listen" in portcullis.json, its validation (the key and the file named), the
// idle timeout that ends a forgotten session, and SIGTERM ending every session's run and server.
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/store/db.js";
import { expectRequestClosedWithRun, verifiedAuditEvents } from "../helpers/approvals.js";
import { alive, readJsonLines, tempDir, waitFor } from "../helpers/files.js";
import { holdStoreLock } from "../helpers/lock.js";
import { CLI, FIXTURES, fixtureCommand, NODE } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";
import { newStateDir } from "../helpers/state.js";
import { type Listener, startListener } from "./listen.js";
import { expectRpcError, initializeBody, messagesOf, openSession, raw } from "./raw.js";

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

function configDir(server: Record<string, unknown>): string {
  const dir = tempDir("portcullis-listen-config-");
  writeFileSync(join(dir, "portcullis.json"), JSON.stringify({ servers: { echo: server } }, null, 2));
  return dir;
}

const listRequest = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" });

describe("config listen", () => {
  it("run LABEL with listen in portcullis.json serves over HTTP", async () => {
    const dir = configDir({
      command: NODE,
      args: [FIXTURES.echo],
      listen: "127.0.0.1:0",
      approval: { default: "none" },
    });
    const stateDir = newStateDir();
    const child = spawnSync(
      NODE,
      [
        CLI,
        "run",
        "--state-dir",
        stateDir,
        "--config",
        join(dir, "portcullis.json"),
        "echo",
        "--listen-max-sessions",
        "x",
      ],
      {
        encoding: "utf8",
        timeout: 20_000,
      },
    );
    // a bad listen flag next to a configured listen is still named
    expect(child.status).toBe(2);
    expect(child.stderr).toMatch(/--listen-max-sessions must be a whole number/);
    const l = await startListener([], {
      stateDir,
      label: "echo",
      args: [],
      configFile: join(dir, "portcullis.json"),
    });
    cleanup.push(() => l.close());
    const session = await openSession(l);
    const r = await raw(l, { headers: l.headers({ "mcp-session-id": session }), body: listRequest });
    expect(r.status).toBe(200);
    expect(r.body).toContain("echo");
  });

  it("--no-auth beside the file's listenTokenFile serves without a token, and the listening line says the file's is not used", async () => {
    const dir = configDir({
      command: NODE,
      args: [FIXTURES.echo],
      listen: "127.0.0.1:0",
      listenTokenFile: "team.token",
    });
    writeFileSync(join(dir, "team.token"), "a-team-token-of-enough-length-0123456789\n", { mode: 0o600 });
    const l = await startListener([], {
      label: "echo",
      args: ["--no-auth"],
      configFile: join(dir, "portcullis.json"),
    });
    cleanup.push(() => l.close());
    const line =
      l
        .stderr()
        .split("\n")
        .find((x) => x.includes("listening on")) ?? "";
    expect(line).toContain("no auth: loopback only");
    expect(line).toContain(
      `the listenTokenFile of "echo" in ${join(dir, "portcullis.json")} is not used (--no-auth)`,
    );
    expect(line).not.toContain("a-team-token");
    const session = await openSession(l);
    const r = await raw(l, { headers: l.headers({ "mcp-session-id": session }), body: listRequest });
    expect(r.status).toBe(200);
  });

  it("a bad listen value is refused naming the file and the key (exit 2)", () => {
    for (const [value, why] of [
      ["localhost", /must be HOST:PORT/],
      ["example.com:80", /has a host that is not an IP address or localhost/],
      [8080, /must be a string/],
    ] as const) {
      const dir = configDir({ command: NODE, args: [FIXTURES.echo], listen: value });
      const file = join(dir, "portcullis.json");
      const r = spawnSync(NODE, [CLI, "run", "--state-dir", newStateDir(), "--config", file, "echo"], {
        encoding: "utf8",
        timeout: 20_000,
      });
      expect(r.status, String(value)).toBe(2);
      expect(r.stderr).toContain(file);
      expect(r.stderr).toContain("servers.echo.listen");
      expect(r.stderr).toMatch(why);
    }
  });
});

describe("session lifetime", () => {
  it("a session with nothing open for --listen-idle-timeout is ended: its id is unknown after, its run ended", async () => {
    const l: Listener = await startListener(fixtureCommand("echo"), {
      args: ["--approval", "none", "--listen-idle-timeout", "1000"],
    });
    cleanup.push(() => l.close());
    const session = await openSession(l);
    // watched from the store, not by requests: a request would keep the session alive
    const runEnded = () => {
      const db = openStore(l.stateDir);
      try {
        const runs = db.prepare("SELECT ended_at FROM runs").all() as { ended_at: string | null }[];
        return runs.length > 0 && runs.every((r) => r.ended_at !== null);
      } finally {
        db.close();
      }
    };
    await waitFor(runEnded, 20_000, "the idle session's run to end");
    const after = await raw(l, { headers: l.headers({ "mcp-session-id": session }), body: listRequest });
    expect(after.status).toBe(404);
  });

  it("SIGTERM ends every session: runs ended, exit 0", async () => {
    const l = await startListener(fixtureCommand("echo"), { args: ["--approval", "none"] });
    cleanup.push(() => l.close());
    await openSession(l);
    await openSession(l);
    const exited = l.exited.then(({ code }) => code);
    l.proc.kill("SIGTERM");
    expect(await exited).toBe(0);
    const db = openStore(l.stateDir);
    try {
      const runs = db.prepare("SELECT ended_at FROM runs").all() as { ended_at: string | null }[];
      expect(runs).toHaveLength(2);
      expect(runs.every((r) => r.ended_at !== null)).toBe(true);
    } finally {
      db.close();
    }
  });
});

describe("SIGTERM while another process holds the store's lock", () => {
  it("every session's server ends, the front exits after one wait and says once what it left; the next start closes the runs", async () => {
    const l = await startListener(fixtureCommand("echo"), {
      args: ["--approval", "none"],
      env: { PORTCULLIS_BUSY_TIMEOUT_MS: "1500" },
    });
    cleanup.push(() => l.close());
    await openSession(l);
    await openSession(l);
    const lock = await holdStoreLock(l.stateDir);
    let held = true;
    cleanup.push(async () => {
      if (held) await lock.release();
    });
    const exited = l.exited.then(({ code }) => code);
    l.proc.kill("SIGTERM");
    // ended with the lock still held: one wait for it, not one per session and write
    expect(await exited).toBe(0);
    const said = l.stderr();
    expect(said.match(/stayed locked by another process/g), said).toHaveLength(1);
    expect(said).toMatch(/audit records \(.*run_ended/);
    expect(said).not.toMatch(/cannot record|could not record|cannot update this gateway's row|SqliteError/);
    await lock.release();
    held = false;

    // the next gateway's start ends the two runs left open, as after a crash; the chain verifies
    const next = rawGateway({
      args: ["--label", "echo", "--approval", "none", "--", ...fixtureCommand("echo")],
      stateDir: l.stateDir,
    });
    cleanup.push(() => next.close());
    await waitFor(() => /ended 2 agent run\(s\)/.test(next.stderr()), 30_000, "the next start's recovery");
    next.closeStdin();
    expect(await next.exited).toMatchObject({ code: 0 });
    const events = await verifiedAuditEvents(l.stateDir);
    expect(events.filter((e) => e.type === "run_ended").map((e) => e.reason)).toEqual([
      "gateway_gone",
      "gateway_gone",
    ]);
  }, 60_000);
});

describe("while shutting down", () => {
  it("a POST gets 503 with a JSON-RPC error (id null), a GET 503 in text", async () => {
    // a server slow to stop (it ignores SIGTERM for a while after its input closes): the front
    // keeps listening, refusing, until its sessions have ended
    const slow = ["sh", "-c", `trap '' TERM; "$0" "$1"; sleep 30`, NODE, FIXTURES.echo];
    const l = await startListener(slow, { args: ["--approval", "none"] });
    cleanup.push(() => l.close());
    await openSession(l);
    l.proc.kill("SIGTERM");
    const [post, get] = await waitFor(
      async () => {
        const both = await Promise.all([
          raw(l, { body: initializeBody() }),
          raw(l, { method: "GET", headers: l.headers({ accept: "text/event-stream" }) }),
        ]);
        return both.every((r) => r.status === 503) ? both : undefined;
      },
      20_000,
      "503 while the sessions end",
    );
    expectRpcError(post!, /shutting down/);
    expect(get.headers["content-type"]).toMatch(/^text\/plain/);
    expect(get.body).toBe("shutting down\n");
  });

  it("SIGTERM while a call waits for a human: the waiting POST gets its refusal, and the audit ends the call", async () => {
    const l = await startListener(fixtureCommand("habits"), { args: ["--approval", "session"] });
    cleanup.push(() => l.close());
    const session = await openSession(l);
    const headers = l.headers({ "mcp-session-id": session });
    const listed = await raw(l, { headers, body: listRequest });
    expect(listed.body).toContain("slow");
    const call = raw(l, {
      headers,
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: "waits",
        method: "tools/call",
        params: { name: "slow", arguments: { ms: 1 } },
      }),
    });
    await waitFor(() => /approval needed for "slow"/.test(l.stderr()), 10_000, "the approval request");
    const exited = l.exited.then(({ code }) => code);
    l.proc.kill("SIGTERM");
    const answer = messagesOf((await call).body).find((m) => m.id === "waits" && m.method === undefined);
    expect(answer?.error).toMatchObject({ code: -32050, data: { error: "authorization_required" } });
    expect(await exited).toBe(0);
    // as on stdio: the call's refusal is recorded, and the run's end closes the request
    await expectRequestClosedWithRun(l.stateDir);
  });

  it("a second SIGTERM cuts the servers' grace short: each session's server killed, runs ended, exit 0", async () => {
    // servers that hear neither the end of their stdin nor SIGTERM, with a grace far beyond the
    // test's timeout: only the second signal can end the shutdown in time
    const record = join(tempDir("portcullis-listen-signals-"), "record.jsonl");
    const notes = () =>
      readJsonLines<{ method?: string; pid?: number; stdinEnd?: number; sigterm?: number }>(record);
    const l = await startListener(fixtureCommand("children"), {
      args: ["--approval", "none"],
      env: {
        FIXTURE_RECORD: record,
        FIXTURE_STDIN_END: "ignore",
        FIXTURE_IGNORE_TERM: "1",
        PORTCULLIS_SHUTDOWN_GRACE_MS: "600000",
      },
    });
    cleanup.push(() => l.close());
    await openSession(l);
    await openSession(l);
    const servers = [...new Set(notes().flatMap((n) => (n.method === "initialize" ? [n.pid!] : [])))];
    expect(servers).toHaveLength(2);
    const exited = l.exited;
    l.proc.kill("SIGTERM");
    await waitFor(
      () => servers.every((pid) => notes().some((n) => n.stdinEnd === pid)),
      20_000,
      "both servers' stdin to close",
    );
    l.proc.kill("SIGTERM");
    expect(await exited).toEqual({ code: 0, signal: null });
    for (const pid of servers) await waitFor(() => !alive(pid), 10_000, `server ${pid} to be gone`);
    expect(notes().filter((n) => n.sigterm !== undefined)).toEqual([]);
    const db = openStore(l.stateDir);
    try {
      expect(db.prepare("SELECT count(*) FROM runs WHERE ended_at IS NULL").pluck().get()).toBe(0);
      expect(db.prepare("SELECT count(*) FROM gateways WHERE ended_at IS NULL").pluck().get()).toBe(0);
    } finally {
      db.close();
    }
  });
});

describe("a client that vanishes with a call unanswered", () => {
  it("does not keep its session past the idle timeout: the slot is freed for the next client", async () => {
    const l: Listener = await startListener(fixtureCommand("lenient"), {
      args: ["--approval", "none", "--listen-idle-timeout", "1000", "--listen-max-sessions", "1"],
    });
    cleanup.push(() => l.close());
    const session = await openSession(l);
    // A call the server never answers, then the client is gone (its connection drops).
    await new Promise<void>((resolve) => {
      const req = request({
        host: "127.0.0.1",
        port: l.port,
        path: "/mcp",
        method: "POST",
        headers: l.headers({ "mcp-session-id": session }),
      });
      req.on("error", () => resolve());
      req.end(
        JSON.stringify({
          jsonrpc: "2.0",
          id: 7,
          method: "tools/call",
          params: { name: "echo", arguments: { message: "hang" } },
        }),
      );
      setTimeout(() => {
        req.destroy();
        resolve();
      }, 500);
    });
    // The one slot is taken until the session ends; then a new client gets its own.
    await waitFor(
      async () => (await raw(l, { body: initializeBody(1) })).status === 200,
      20_000,
      "a new session once the vanished client's has ended",
    );
    const after = await raw(l, { headers: l.headers({ "mcp-session-id": session }), body: listRequest });
    expect(after.status).toBe(404);
  });
});

describe("a server that keeps crashing", () => {
  it("ends its session under onChange restart (no pause over HTTP): the slot is freed for the next client", async () => {
    // crashy exits at once: the session's server crash-loops within seconds (respawned after 50 ms,
    // doubled at each crash, not the supervisor's 200 ms: the 5th crash comes in well under a second
    // of waits, not three; the pace is not what this case is about)
    const l: Listener = await startListener(fixtureCommand("crashy"), {
      args: ["--approval", "none", "--on-change", "restart", "--listen-max-sessions", "1"],
      env: { PORTCULLIS_RESPAWN_BACKOFF_MS: "50" },
    });
    cleanup.push(() => l.close());
    const first = await raw(l, { body: initializeBody() });
    const session = first.headers["mcp-session-id"] as string;
    expect(session).toBeTruthy();
    await waitFor(() => /times within 30 s/.test(l.stderr()), 30_000, "the crash-loop line");
    // a paused session would hold the one slot until the idle timeout (10 min): 503 meanwhile
    await waitFor(
      async () => (await raw(l, { body: initializeBody(1) })).status === 200,
      20_000,
      "a new session once the crash-looping one has ended",
    );
    // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
    await waitFor(
      () => /supervision stopped/.test(l.stderr()),
      20_000,
      "the gateway's line on the stopped supervision",
    );
    expect(l.stderr()).toMatch(/supervision stopped/);
    expect(l.stderr()).not.toMatch(/supervision paused/);
    const after = await raw(l, { headers: l.headers({ "mcp-session-id": session }), body: listRequest });
    expect(after.status).toBe(404);
  });
});
