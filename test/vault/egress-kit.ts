// What the egress tests share: a secret stored for HTTP delivery, unlock (locked again after the
// test), a portcullis.json for one server with that credential, the upstreams, a gateway, and a
// call approved through the real CLI whenever a grant is asked for.
import { writeFileSync } from "node:fs";
import { type Agent, request } from "node:http";
import { connect, createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { expect } from "vitest";
import { decideByCli, storedPending, storeStamp } from "../helpers/approvals.js";
import { sleep, tempDir, waitFor } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { NODE, REPO } from "../helpers/paths.js";
import { passphraseEnv } from "../helpers/state.js";
import { httpsUpstream, httpUpstream, type Upstream } from "./egress-upstreams.js";

export const SECRET = "egress-test-value-4d2b9e71";
export const PLACEHOLDER = "portcullis-placeholder:inventory-api";

const servers = join(REPO, "test", "fixtures", "servers");
export const nodeServer = { command: NODE, args: [join(servers, "egress-node.mjs")] };
export const pythonServer = { command: "python3", args: [join(servers, "egress-python.py")] };

export const released = (u: Upstream) => u.received.filter((r) => r.authorization === `Bearer ${SECRET}`);

export function text(r: unknown): string {
  return (r as { content: { text: string }[] }).content[0]?.text ?? "";
}

export function egressKit() {
  const cleanup: (() => Promise<void> | void)[] = [];
  const kit = {
    cleanup,
    async cleanupAll() {
      for (const c of cleanup.reverse()) await c();
      cleanup.length = 0;
    },
    async storeHttpSecret(stateDir: string, ...hosts: string[]) {
      const r = await runCli(
        ["vault", "set", "inventory-api", "--from-stdin", ...hosts.flatMap((h) => ["--host", h])],
        { stateDir, env: passphraseEnv(), input: SECRET },
      );
      expect(r.code, r.stderr).toBe(0);
    },
    async unlock(stateDir: string) {
      const r = await runCli(["unlock"], { stateDir, env: passphraseEnv() });
      expect(r.code, r.stderr).toBe(0);
      cleanup.push(async () => {
        await runCli(["lock"], { stateDir });
      });
    },
    project(
      server: { command: string; args: string[] },
      hosts: string[],
      extra: Record<string, unknown> = {},
    ) {
      const dir = tempDir("portcullis-egress-");
      writeFileSync(
        join(dir, "portcullis.json"),
        JSON.stringify({
          servers: {
            api: {
              ...server,
              credentials: { API_KEY: { secret: "inventory-api", deliver: "http", hosts } },
              ...extra,
            },
          },
        }),
      );
      return dir;
    },
    async upstreams() {
      const dir = tempDir("portcullis-upstream-");
      const plain = await httpUpstream();
      const tls = await httpsUpstream(dir);
      const other = await httpUpstream();
      cleanup.push(
        () => plain.close(),
        () => tls.close(),
        () => other.close(),
      );
      return { plain, tls, other, hosts: [`127.0.0.1:${plain.port}`, `127.0.0.1:${tls.port}`] };
    },
    async gateway(dir: string, stateDir: string, env: Record<string, string> = {}) {
      const gw = await startGateway({ args: ["api"], cwd: dir, stateDir, env });
      cleanup.push(() => gw.close());
      await gw.client.listTools();
      return gw;
    },
  };
  return kit;
}

export type Gw = Awaited<ReturnType<ReturnType<typeof egressKit>["gateway"]>>;

/**
 * Calls a tool, approving the session grant (per tool) when one is asked for. `gw` is a stdio
 * gateway, or anything with a v1 SDK client (an HTTP session of `run --listen`); `options.signal`
 * cancels the call (the client sends notifications/cancelled).
 */
export async function approvedCall(
  gw: { client: Pick<Gw["client"], "callTool"> },
  stateDir: string,
  name: string,
  args: Record<string, unknown>,
  seen: Set<string>,
  options?: { signal?: AbortSignal },
) {
  const call = gw.client.callTool({ name, arguments: args }, undefined, options);
  let answered = false;
  call.then(
    () => {
      answered = true;
    },
    () => {
      answered = true;
    },
  );
  // The requests are read in the test process, and only once the store changed since the last
  // look (a new request is a write): the listing is not what is tested here, and a process per
  // look (`approvals --json`, about 0.2 s of CPU), every 25 ms until the call is answered, was.
  let stamp: string | null = null;
  const first = await waitFor(
    () => {
      if (answered) return "answered";
      const now = storeStamp(stateDir);
      if (now === stamp) return null;
      stamp = now; // taken before the read: a write meanwhile changes it
      return storedPending(stateDir).find((q) => !seen.has(q.request)) ?? null;
    },
    20_000,
    `the call of ${name} or its approval request`,
  );
  if (first !== "answered") {
    seen.add(first.request);
    await decideByCli(stateDir, "approve", first.request);
  }
  return call;
}

/** An absolute-form GET of `url` through the proxy at `port` (over `agent`'s connection when given): its status and body. */
export function getThrough(
  port: number,
  url: string,
  agent?: Agent,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        path: url,
        headers: { host: new URL(url).host },
        ...(agent ? { agent } : {}),
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (d) => {
          body += d;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

/**
 * Runs `work` (a flood being made) while `agent`'s one connection to the proxy at `port` asks for
 * `url` every half second: the proxy, as any Node server, closes a keep-alive connection idle for
 * 5 s, and a flood taking that long on a loaded machine closed the connection the test made before
 * it (the next request then went over a new connection, one past the cap). What each request gets
 * is not looked at here: the request made once `work` is done is what the test judges.
 */
export async function keptOpen<T>(
  port: number,
  url: string,
  agent: Agent,
  work: () => Promise<T>,
): Promise<T> {
  let done = false;
  const warm = (async () => {
    while (!done) {
      await getThrough(port, url, agent).catch(() => null);
      await sleep(500);
    }
  })();
  try {
    return await work();
  } finally {
    done = true;
    await warm;
  }
}

/** The proxy's port, from the gateway's status line. */
export async function proxyPort(gw: Gw): Promise<number> {
  const line = await gw.waitForStderr(/egress proxy on http:\/\/127\.0\.0\.1:(\d+)/);
  return Number(/egress proxy on http:\/\/127\.0\.0\.1:(\d+)/.exec(line)?.[1]);
}

/**
 * Writes `first` to the proxy; when `then` is given, writes it once the first answer's head has
 * arrived (a CONNECT's 200); returns everything read until the proxy closes (or `ms` pass).
 */
export function exchange(
  port: number,
  first: string | Buffer,
  then?: string | Buffer,
  ms = 5000,
): Promise<string> {
  return new Promise((resolve) => {
    const s = connect(port, "127.0.0.1");
    let out = "";
    let sentThen = false;
    const timer = setTimeout(() => s.destroy(), ms);
    s.on("data", (d: Buffer) => {
      out += d.toString("latin1");
      if (then !== undefined && !sentThen && out.includes("\r\n\r\n")) {
        sentThen = true;
        s.write(then);
      }
    });
    s.on("close", () => {
      clearTimeout(timer);
      resolve(out);
    });
    s.on("error", () => {});
    s.write(first);
  });
}

export interface RawUpstream {
  port: number;
  /** every byte received, over all connections */
  text(): string;
  close(): Promise<void>;
}

/**
 * A plain TCP upstream that records every byte; answers each piece it gets with `answer` (a 200
 * saying "ok" unless told) unless `held` (then never a word).
 */
export async function rawUpstream(
  held = false,
  answer = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok",
): Promise<RawUpstream> {
  let got = "";
  const sockets = new Set<Socket>();
  const server: Server = createServer((s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
    s.on("error", () => {});
    s.on("data", (d: Buffer) => {
      got += d.toString("latin1");
      if (!held) s.write(answer);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    port: (server.address() as { port: number }).port,
    text: () => got,
    close: () =>
      new Promise((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}
