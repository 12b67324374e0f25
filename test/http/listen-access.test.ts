// Who may use `run --listen`: the bearer token (generated 0600 in the state directory and shown
// by `portcullis status`, or from --listen-token-file), Host and Origin checked on every request
// (DNS rebinding), --no-auth only on loopback. Real gateway processes, plain HTTP.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { statSync, writeFileSync } from "node:fs";
import { Agent, type ClientRequestArgs } from "node:http";
import { connect, isIP, type NetConnectOpts, type Socket } from "node:net";
import { networkInterfaces } from "node:os";
import { join } from "node:path";
import type { Duplex } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/store/db.js";
import { hostOriginProblem, hostsOfSockets } from "../../src/transport/httpAccess.js";
import { decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { tempDir, waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { modernMeta } from "../helpers/modernMeta.js";
import { CLI, fixtureCommand, NODE } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";
import { type Listener, startListener } from "./listen.js";
import { expectRpcError, initializeBody, messagesOf, openSession, raw } from "./raw.js";

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function listener(args: string[] = []): Promise<Listener> {
  const l = await startListener(fixtureCommand("echo"), { args });
  cleanup.push(() => l.close());
  return l;
}

describe("bearer token", () => {
  it("401 without the token and with a wrong one; 200 with it; the token is 0600 and never logged", async () => {
    const l = await listener();
    const { authorization: _, ...noToken } = l.headers();
    const none = await raw(l, { headers: noToken, body: initializeBody() });
    expect(none.status).toBe(401);
    expect(none.headers["www-authenticate"]).toMatch(/^Bearer/);
    expectRpcError(none, /bearer token is required/);
    // not a POST: the same status, in a line of text
    const get = await raw(l, { method: "GET", headers: { ...noToken, accept: "text/event-stream" } });
    expect(get.status).toBe(401);
    expect(get.headers["content-type"]).toMatch(/^text\/plain/);
    const wrongSameLength = `${l.token!.slice(0, -1)}${l.token!.endsWith("0") ? "1" : "0"}`;
    for (const bad of [wrongSameLength, "short", `${l.token}x`]) {
      const r = await raw(l, {
        headers: l.headers({ authorization: `Bearer ${bad}` }),
        body: initializeBody(),
      });
      expect(r.status).toBe(401);
      // told apart from a missing one: an old token pasted is said to be wrong
      expectRpcError(r, /the bearer token given is not this gateway's/);
      expect(r.body).not.toContain(bad);
    }
    expect((await raw(l, { body: initializeBody() })).status).toBe(200);
    const tokenFile = join(l.stateDir, "listen", "http-test.token");
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
    expect(l.stderr()).not.toContain(l.token!);
  });

  it("portcullis status shows the URL, the token file and the token (text and --json)", async () => {
    const l = await listener();
    const text = await runCli(["status", "--state-dir", l.stateDir]);
    expect(text.stdout).toContain(`listening on ${l.url}`);
    expect(text.stdout).toContain(`Authorization: Bearer ${l.token}`);
    const json = JSON.parse((await runCli(["status", "--json", "--state-dir", l.stateDir])).stdout);
    expect(json.listening).toEqual([
      expect.objectContaining({
        url: l.url,
        auth: "bearer",
        token: l.token,
        tokenFile: join(l.stateDir, "listen", "http-test.token"),
      }),
    ]);
  });

  it("--listen-token-file: that token, and no other, is accepted", async () => {
    const file = join(tempDir("portcullis-token-"), "token");
    writeFileSync(file, "a-token-chosen-by-the-user-0123456789\n", { mode: 0o600 });
    const l = await listener(["--listen-token-file", file]);
    expect(l.token).toBe("a-token-chosen-by-the-user-0123456789");
    expect((await raw(l, { body: initializeBody() })).status).toBe(200);
  });

  it("--listen-token-file naming a FIFO is refused at once, not waited on", async () => {
    const fifo = join(tempDir("portcullis-token-"), "token");
    expect(spawnSync("mkfifo", [fifo]).status).toBe(0);
    const r = await runCli(
      ["run", "--listen", "127.0.0.1:0", "--listen-token-file", fifo, "--", ...fixtureCommand("echo")],
      { stateDir: newStateDir(), timeoutMs: 15_000 },
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `portcullis run: --listen-token-file ${fifo}: it is not a regular file (a FIFO, socket or device).\n`,
    );
  });
  it("listenTokenFile in portcullis.json without listen is refused at run, naming the key", async () => {
    // as --listen-token-file without --listen: never ignored silently, a missing file included
    const project = tempDir("portcullis-project-");
    const [command, ...args] = fixtureCommand("echo");
    const config = join(project, "portcullis.json");
    writeFileSync(
      config,
      JSON.stringify({ servers: { plain: { command, args, listenTokenFile: "missing.token" } } }),
    );
    const r = await runCli(["run", "plain"], { stateDir: newStateDir(), cwd: project, timeoutMs: 15_000 });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `portcullis run: listenTokenFile of "plain" in ${config} needs listen (in the file, or run --listen HOST:PORT).\n`,
    );
  });
});

describe("Host and Origin (DNS rebinding)", () => {
  it("a foreign Host is refused with 403", async () => {
    const l = await listener();
    for (const host of ["evil.example:80", `attacker.example:${l.port}`, "127.0.0.1:1"]) {
      const r = await raw(l, { headers: l.headers({ host }), body: initializeBody() });
      expect(r.status, host).toBe(403);
      expectRpcError(r, /is not this server: refused \(DNS rebinding protection\)/);
    }
    expect(
      (await raw(l, { headers: l.headers({ host: `localhost:${l.port}` }), body: initializeBody() })).status,
    ).toBe(200);
  });

  it("a foreign Origin is refused with 403; the server's own loopback origin passes", async () => {
    const l = await listener();
    for (const origin of [
      "http://evil.example",
      `http://attacker.example:${l.port}`,
      `https://127.0.0.1:${l.port}`,
      "null",
      // no browser writes these; the URL parser would read each as this server's origin
      `http://evil@127.0.0.1:${l.port}`,
      `http://127.0.0.1:${l.port}/mcp`,
      `http://127.0.0.1:${l.port}/`,
      `HTTP://LOCALHOST:${l.port}`,
      `http://127.1:${l.port}`,
      `http://%6cocalhost:${l.port}`,
      `http://localhost:0${l.port}`,
      `http:localhost:${l.port}`,
    ]) {
      const r = await raw(l, { headers: l.headers({ origin }), body: initializeBody() });
      expect(r.status, origin).toBe(403);
      expectRpcError(r, /DNS rebinding protection/);
    }
    const own = await raw(l, {
      headers: l.headers({ origin: `http://localhost:${l.port}` }),
      body: initializeBody(),
    });
    expect(own.status).toBe(200);
  });
});

describe("Host and Origin on the default port (the check itself: binding port 80 needs privileges)", () => {
  it("port 80: a Host that leaves the port out is the same as one that writes it; an Origin leaves it out", () => {
    // a front bound to 127.0.0.1, and one bound to ::1: each takes its own address and localhost
    for (const [bound, own, other] of [
      ["127.0.0.1", "127.0.0.1", "[::1]"],
      ["::1", "[::1]", "127.0.0.1"],
    ] as const) {
      const hosts = hostsOfSockets([bound], 80);
      for (const host of [own, `${own}:80`, "localhost", "LOCALHOST:80"])
        expect(hostOriginProblem(host, undefined, hosts), `${bound} Host ${host}`).toBeNull();
      // an Origin is as a browser writes it: without the default port (docs/security.md)
      for (const origin of [`http://${own}`, "http://localhost"])
        expect(hostOriginProblem(own, origin, hosts), `${bound} Origin ${origin}`).toBeNull();
      // still only this server: nor the other loopback address, which it does not hold
      for (const host of ["evil.example", "evil.example:80", `${own}:8080`, `${own}:`, "[::1", "", other])
        expect(hostOriginProblem(host, undefined, hosts), `${bound} Host ${host}`).not.toBeNull();
      for (const origin of [
        "http://evil.example",
        `https://${own}`,
        `http://${own}:8080`,
        "null",
        `http://${own}:80`,
        `http://${other}`,
      ])
        expect(hostOriginProblem(own, origin, hosts), `${bound} Origin ${origin}`).not.toBeNull();
    }
  });

  it("another port: leaving the port out means 80, which is not this server", () => {
    const hosts = hostsOfSockets(["127.0.0.1"], 8765);
    expect(hostOriginProblem("127.0.0.1:8765", "http://localhost:8765", hosts)).toBeNull();
    expect(hostOriginProblem("127.0.0.1", undefined, hosts)).toMatch(/is not this server/);
    expect(hostOriginProblem("127.0.0.1:8765", "http://127.0.0.1", hosts)).toMatch(/is not this server/);
  });
});

describe("an unspecified address (0.0.0.0)", () => {
  it("takes the machine's own addresses in Host, still refuses a foreign name, and still wants the token", async () => {
    const l = await startListener(fixtureCommand("echo"), { address: "0.0.0.0:0" });
    cleanup.push(() => l.close());
    const viaLoopback = await raw(l, {
      headers: l.headers({ host: `127.0.0.1:${l.port}` }),
      body: initializeBody(),
    });
    expect(viaLoopback.status).toBe(200);
    const foreign = await raw(l, {
      headers: l.headers({ host: `rebound.example:${l.port}` }),
      body: initializeBody(),
    });
    expect(foreign.status).toBe(403);
    const { authorization: _, ...noToken } = l.headers({ host: `127.0.0.1:${l.port}` });
    expect((await raw(l, { headers: noToken, body: initializeBody() })).status).toBe(401);
  });
});

describe("--no-auth", () => {
  it("is refused on a non-loopback address: exit 2, one sentence naming the flag", () => {
    for (const addr of ["0.0.0.0:0", "192.168.1.20:8080", "[::]:0"]) {
      const r = spawnSync(
        NODE,
        [
          CLI,
          "run",
          "--state-dir",
          newStateDir(),
          "--listen",
          addr,
          "--no-auth",
          "--",
          ...fixtureCommand("echo"),
        ],
        { encoding: "utf8", timeout: 20_000 },
      );
      expect(r.status, addr).toBe(2);
      expect(r.stderr).toMatch(/--no-auth is allowed only on a loopback address/);
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
    }
  });

  it("on loopback, serves without a token", async () => {
    const l = await listener(["--no-auth"]);
    expect(l.token).toBeNull();
    expect((await raw(l, { body: initializeBody() })).status).toBe(200);
  });
});

describe("a session belongs to the process that opened it", () => {
  it.runIf(process.platform === "linux")(
    "another local process with the token and the session id gets 404, not the session (nor its run's grants)",
    async () => {
      const l = await listener(["--approval", "none"]);
      const session = await openSession(l);
      const list = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" });
      const headers = l.headers({ "mcp-session-id": session });
      const other = spawnSync(
        NODE,
        [
          "-e",
          `fetch(${JSON.stringify(l.url)}, { method: "POST", headers: ${JSON.stringify(headers)}, body: ${JSON.stringify(list)} }).then((r) => process.stdout.write(String(r.status)))`,
        ],
        { encoding: "utf8", timeout: 20_000 },
      );
      expect(other.stdout).toBe("404");
      const own = await raw(l, { headers, body: list });
      expect(own.status).toBe(200);
    },
  );
});

/**
 * A keep-alive agent of one connection that a child process holds too (as a forked child holds
 * its parent's sockets): the kernel lists two processes on the socket, so the front cannot tell
 * which is the client, and the client is not identified.
 */
class SharedSocketAgent extends Agent {
  holder: ChildProcess | null = null;

  constructor() {
    super({ keepAlive: true, maxSockets: 1 });
  }

  // Node takes the socket from the callback when nothing is returned (the second way its docs
  // give); @types/node 20 types only the first (a socket returned), so Agent's signature is stated apart
  override createConnection(
    options: ClientRequestArgs,
    done?: (err: Error | null, stream: Duplex) => void,
  ): Duplex;
  override createConnection(
    options: NetConnectOpts,
    done?: (err: Error | null, socket: Socket) => void,
  ): Duplex | undefined {
    const socket = connect(options);
    socket.once("error", (e) => done?.(e, socket));
    socket.once("connect", () => {
      // fd 3 of the child is the same socket (its descriptor, inherited), held until the child
      // is killed; the socket itself is not handed over, so this process keeps reading it
      const fd = (socket as unknown as { _handle: { fd: number } })._handle.fd;
      this.holder = spawn(NODE, ["-e", "setInterval(() => {}, 1000)"], {
        stdio: ["ignore", "ignore", "ignore", fd],
      });
      this.holder.once("spawn", () => done?.(null, socket));
    });
    return undefined;
  }

  override destroy(): void {
    super.destroy();
    this.holder?.kill("SIGKILL");
  }
}

const MODERN_META = modernMeta({}, { name: "raw", version: "1" });
const modernBody = (id: number, method: string, params: Record<string, unknown> = {}) =>
  JSON.stringify({ jsonrpc: "2.0", id, method, params: { ...params, _meta: MODERN_META } });

/**
 * An address of one of this machine's own interfaces that is not loopback (IPv4 first; a
 * link-local IPv6 address needs a zone to be dialled, so it is left out), or null.
 */
function ownNonLoopbackAddress(): string | null {
  const all = Object.values(networkInterfaces())
    .flatMap((list) => list ?? [])
    .filter((a) => !a.internal && !a.address.toLowerCase().startsWith("fe80:"));
  return (all.find((a) => a.family === "IPv4") ?? all[0])?.address ?? null;
}

describe("a local client that dials the machine's own non-loopback address", () => {
  it.runIf(process.platform === "linux")(
    "is identified (its pid heads its run's chain), and another process reusing its session id gets 404",
    async (ctx) => {
      const own = ownNonLoopbackAddress();
      if (own === null) ctx.skip("this machine has no interface address other than loopback to dial");
      const v6 = isIP(own!) === 6;
      const l = await startListener(fixtureCommand("echo"), {
        address: v6 ? "[::]:0" : "0.0.0.0:0",
        args: ["--approval", "none"],
      });
      cleanup.push(() => l.close());
      const host = `${v6 ? `[${own}]` : own}:${l.port}`;
      const via = (headers: Record<string, string>, body: string) =>
        raw(l, { host: own!, headers: l.headers({ host, ...headers }), body });
      const init = await via({}, initializeBody());
      expect(init.status).toBe(200);
      const session = init.headers["mcp-session-id"] as string;
      const initialized = JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" });
      expect((await via({ "mcp-session-id": session }, initialized)).status).toBe(202);
      const list = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" });
      expect((await via({ "mcp-session-id": session }, list)).status).toBe(200);
      // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
      await waitFor(
        () => l.stderr().includes(`http session ${session.slice(0, 8)}…`),
        20_000,
        "the gateway's line on the session",
      );
      expect(l.stderr()).toMatch(
        new RegExp(`http session ${session.slice(0, 8)}… \\(legacy\\) from pid ${process.pid}\\b`),
      );
      const db = openStore(l.stateDir);
      try {
        const runs = db.prepare("SELECT chain_json FROM runs").all() as { chain_json: string }[];
        expect(runs).toHaveLength(1);
        expect((JSON.parse(runs[0]!.chain_json) as { pid?: number }[])[0]!.pid).toBe(process.pid);
      } finally {
        db.close();
      }

      // another local process, through the same address, with the token and the session id
      const headers = l.headers({ "mcp-session-id": session });
      const other = spawnSync(
        NODE,
        [
          "-e",
          `fetch(${JSON.stringify(`http://${host}/mcp`)}, { method: "POST", headers: ${JSON.stringify(headers)}, body: ${JSON.stringify(list)} }).then((r) => process.stdout.write(String(r.status)))`,
        ],
        { encoding: "utf8", timeout: 20_000 },
      );
      expect(other.stdout).toBe("404");
      expect((await via({ "mcp-session-id": session }, list)).status).toBe(200);
    },
  );
});

describe("a modern-era session has no session id on the wire", () => {
  it.runIf(process.platform === "linux")(
    "another process naming the front's own key of a client not identified (modern-conn-N) in GET or DELETE gets 404; the client's call is unaffected",
    async () => {
      const l = await startListener(fixtureCommand("modern"), { args: ["--approval-timeout", "60000"] });
      cleanup.push(() => l.close());
      const agent = new SharedSocketAgent();
      cleanup.push(async () => agent.destroy());
      const a = (body: string) => raw(l, { agent, body });
      expect((await a(modernBody(1, "server/discover"))).status).toBe(200);
      // the premise: the client was not identified (its session is keyed by its connection)
      // the line is written before the answer, but stderr and HTTP reach the test apart: wait for it
      await waitFor(
        () => /http session modern-c… \(modern\) from (?!pid )/.test(l.stderr()),
        10_000,
        "the session's status line",
      );
      expect((await a(modernBody(2, "tools/list"))).status).toBe(200);
      const call = a(modernBody(3, "tools/call", { name: "echo", arguments: { text: "A" } }));
      const request = await nextStoredRequest(l.stateDir);

      // another local process with the token guesses the key; it gets nothing under any of them
      const script = `
        const [url, headers] = [process.argv[1], JSON.parse(process.argv[2])];
        const out = [];
        for (const key of ["modern-conn-1", "modern-conn-2", "modern-conn-3"]) {
          const get = await fetch(url, { headers: { ...headers, "mcp-session-id": key, accept: "text/event-stream" } });
          out.push(\`GET \${key} \${get.status}\`);
          get.body?.cancel();
          const del = await fetch(url, { method: "DELETE", headers: { ...headers, "mcp-session-id": key } });
          out.push(\`DELETE \${key} \${del.status}\`);
        }
        process.stdout.write(out.join("\\n"));
        process.exit(0);`;
      const other = spawnSync(NODE, ["-e", script, l.url, JSON.stringify(l.headers())], {
        encoding: "utf8",
        timeout: 20_000,
      });
      expect(other.stdout.split("\n")).toEqual([
        "GET modern-conn-1 404",
        "DELETE modern-conn-1 404",
        "GET modern-conn-2 404",
        "DELETE modern-conn-2 404",
        "GET modern-conn-3 404",
        "DELETE modern-conn-3 404",
      ]);

      // the client's call still waits for its human, and runs once approved
      await decideByCli(l.stateDir, "approve", request.request, "--for", "call");
      const answer = messagesOf((await call).body).find((m) => m.id === 3);
      expect(answer?.error).toBeUndefined();
      expect(answer?.result).toBeDefined();
    },
  );
});

describe("a client whose socket several processes hold", () => {
  it.runIf(process.platform === "linux")(
    "is not identified, and its status line and run's chain say the socket is held by several processes, naming them",
    async () => {
      const l = await listener(["--approval", "none"]);
      const agent = new SharedSocketAgent();
      cleanup.push(async () => agent.destroy());
      const init = await raw(l, { agent, body: initializeBody() });
      expect(init.status).toBe(200);
      const session = init.headers["mcp-session-id"] as string;
      const headers = l.headers({ "mcp-session-id": session });
      const initialized = JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" });
      expect((await raw(l, { agent, headers, body: initialized })).status).toBe(202);
      const list = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" });
      expect((await raw(l, { agent, headers, body: list })).status).toBe(200);
      const why = `the connecting socket is held by several processes (pids ${[process.pid, agent.holder!.pid!].sort((a, b) => a - b).join(", ")})`;
      // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
      await waitFor(
        () => l.stderr().includes(`http session ${session.slice(0, 8)}…`),
        20_000,
        "the gateway's line on the session",
      );
      expect(l.stderr()).toContain(`http session ${session.slice(0, 8)}… (legacy) from ${why}`);
      expect(l.stderr()).not.toMatch(/not found from its socket/);
      const db = openStore(l.stateDir);
      try {
        const runs = db.prepare("SELECT chain_json FROM runs").all() as { chain_json: string }[];
        expect(runs).toHaveLength(1);
        const chain = JSON.parse(runs[0]!.chain_json) as { pid: number; note?: string }[];
        expect(chain).toHaveLength(1);
        expect(chain[0]!.note).toContain(why);
      } finally {
        db.close();
      }
    },
  );
});
