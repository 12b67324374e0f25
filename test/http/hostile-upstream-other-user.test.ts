// `run --url http://127.0.0.1:PORT/…` is allowed without --allow-insecure because nobody else is
// on the path; but loopback is this machine, not this user. No certificate says whose server
// answers over http://, and a port the user's server left free (not started yet, restarting) can
// be taken by another user's process, which would be sent every call and the configured headers
// (vault secrets among them). The gateway reads the kernel's socket table (Linux) on each new
// connection and sends nothing to a listener of another user: at start (the probe: "cannot
// reach … another user's (uid 65534)") and on every later connection of the kept-alive pool.
// Spawning another user's process (nobody, 65534) needs root.
import { type ChildProcess, spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { UpstreamConnections } from "../../src/supervisor/remoteTransport.js";
import { completeLines } from "../helpers/completeLines.js";
import { waitFor } from "../helpers/files.js";
import { NODE } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";

const SECRET = "squat-secret-0123456789abcdef";
const ROOT_ON_LINUX = process.platform === "linux" && process.getuid?.() === 0;

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** An HTTP server of `nobody` on 127.0.0.1: its port, and every request it was sent. */
async function squatter(): Promise<{ port: number; seen: () => string[]; proc: ChildProcess }> {
  const script = `
    require("node:http").createServer((req, res) => {
      process.stdout.write(JSON.stringify({ method: req.method, url: req.url, headers: req.headers }) + "\\n");
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"jsonrpc":"2.0","id":1,"result":{}}');
    }).listen(0, "127.0.0.1", function () { process.stdout.write("PORT " + this.address().port + "\\n"); });
  `;
  const p: ChildProcess = spawn(NODE, ["-e", script], {
    uid: 65534,
    gid: 65534,
    stdio: ["ignore", "pipe", "inherit"],
  });
  cleanup.push(() => void p.kill("SIGKILL"));
  let out = "";
  p.stdout!.setEncoding("utf8").on("data", (c: string) => {
    out += c;
  });
  // only lines written whole: a chunk can end inside one ("PORT 4" of "PORT 43117", or a request
  // line before the headers that carry the secret)
  const lines = () => completeLines(out);
  const port = await new Promise<number>((resolve, reject) => {
    const t = setInterval(() => {
      const m = lines()
        .map((l) => /^PORT (\d+)$/.exec(l))
        .find((x) => x !== null);
      if (m) {
        clearInterval(t);
        resolve(Number(m[1]));
      }
    }, 10);
    p.once("exit", () => reject(new Error("the squatter exited")));
  });
  return { port, seen: () => lines().filter((l) => l.startsWith("{")), proc: p };
}

describe("an http:// upstream whose port another user's process holds", () => {
  it.skipIf(!ROOT_ON_LINUX)(
    "run --url: nothing is sent to it, the header secret included; the gateway says whose it is",
    async () => {
      const sq = await squatter();
      const gw: RawGateway = rawGateway({
        args: [
          "--label",
          "squatted",
          "--approval",
          "none",
          "--url",
          `http://127.0.0.1:${sq.port}/mcp`,
          "--header",
          `X-Api-Key: ${SECRET}`,
        ],
      });
      cleanup.push(() => gw.close());
      // before the fix the gateway started, and the client's initialize went to the squatter
      await Promise.race([gw.exited, gw.initialize(undefined, 10_000).catch(() => null)]);
      expect(sq.seen()).toEqual([]);
      const exit = await gw.exited;
      expect(exit.code).toBe(2);
      expect(gw.stderr()).toMatch(
        /cannot reach http:\/\/127\.0\.0\.1:\d+\/mcp: the process listening at 127\.0\.0\.1:\d+ is another user's \(uid 65534\); nothing was sent to it/,
      );
      expect(gw.stderr()).not.toContain(SECRET);
    },
  );

  it.skipIf(!ROOT_ON_LINUX)(
    "run --url: a squatter that has not accepted the connection yet (stopped, or busy) is known by its listener's uid; nothing is sent to it",
    async () => {
      const sq = await squatter();
      // Stopped, it accepts nothing: the gateway's connections wait in its backlog, listed with no
      // inode and the listener's uid. Before this, such a connection was "not found", taken for
      // no other user's, and the client's initialize, header and all, was written into it.
      sq.proc.kill("SIGSTOP");
      let stopped = true;
      cleanup.push(() => {
        if (stopped) sq.proc.kill("SIGCONT");
      });
      const gw: RawGateway = rawGateway({
        args: [
          "--label",
          "squatted-late",
          "--approval",
          "none",
          "--url",
          `http://127.0.0.1:${sq.port}/mcp`,
          "--header",
          `X-Api-Key: ${SECRET}`,
        ],
      });
      cleanup.push(() => gw.close());
      await Promise.race([gw.exited, gw.initialize(undefined, 10_000).catch(() => null)]);
      const exit = await Promise.race([gw.exited, gw.close().then(() => null)]);
      sq.proc.kill("SIGCONT");
      stopped = false;
      // what waited in its backlog is read now; a request of the test's own, queued after it, says
      // when the squatter has taken all that came before
      await fetch(`http://127.0.0.1:${sq.port}/after-the-gateway`).catch(() => null);
      await waitFor(
        () => sq.seen().some((l) => l.includes("/after-the-gateway")) || undefined,
        10_000,
        "the squatter's backlog",
      );
      expect(sq.seen().filter((l) => l.includes(SECRET))).toEqual([]);
      expect(sq.seen()).toHaveLength(1);
      expect(exit?.code).toBe(2);
      expect(gw.stderr()).toMatch(
        /cannot reach http:\/\/127\.0\.0\.1:\d+\/mcp: the process listening at 127\.0\.0\.1:\d+ is another user's \(uid 65534\); nothing was sent to it/,
      );
      expect(gw.stderr()).not.toContain(SECRET);
    },
  );

  it.skipIf(!ROOT_ON_LINUX)(
    "a later connection of the pool: the request is destroyed before a byte of it is written; one to the user's own server goes",
    async () => {
      const sq = await squatter();
      const send = (port: number) =>
        new Promise<string>((resolve) => {
          const c = new UpstreamConnections(new URL(`http://127.0.0.1:${port}/mcp`), 5_000);
          cleanup.push(() => c.close());
          const req = c.request("POST", { "x-api-key": SECRET, "content-type": "application/json" });
          req.on("error", (e) => resolve(`error: ${e.message}`));
          req.on("response", (res) => {
            res.resume();
            resolve(`answered ${res.statusCode}`);
          });
          c.whenVerified(
            req,
            null,
            () => req.end('{"jsonrpc":"2.0","id":1,"method":"ping"}'),
            () => resolve("differs"),
          );
        });
      expect(await send(sq.port)).toMatch(
        /^error: the process listening at 127\.0\.0\.1:\d+ is another user's \(uid 65534\)/,
      );
      expect(sq.seen()).toEqual([]);

      // the control: the user's own server on loopback gets the request
      const seen: string[] = [];
      const own: Server = createServer((req, res) => {
        seen.push(`${req.method} ${req.headers["x-api-key"]}`);
        res.end("{}");
      });
      await new Promise<void>((r) => own.listen(0, "127.0.0.1", () => r()));
      cleanup.push(() => new Promise<void>((r) => own.close(() => r())));
      expect(await send((own.address() as { port: number }).port)).toBe("answered 200");
      expect(seen).toEqual([`POST ${SECRET}`]);
    },
  );
});
