// A session's egress proxy (deliver: http) tunnels CONNECT to any destination it is not told to
// refuse, and it runs in the front's own process: a tunnel to the front's own port is a
// connection whose client end the front itself holds. Read from the kernel's socket tables, its
// process would be the gateway: the run's chain, the "who asks" of every review, would name
// portcullis itself, and every connection so tunnelled, whichever process opened it, would share
// that one process's modern-era session and its grants. The front is never its own client: such
// a connection is not identified (a session of its own per connection).
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { wholeLines } from "../helpers/completeLines.js";
import { waitFor } from "../helpers/files.js";
import { newStateDir } from "../helpers/state.js";
import { type Listener, startListener } from "../http/listen.js";
import { modernRequester } from "../http/pipeline.js";
import { openSession } from "../http/raw.js";
import { egressKit, nodeServer } from "./egress-kit.js";

const k = egressKit();
afterEach(() => k.cleanupAll());

const request = modernRequester("egress-front-loop");

/** A tunnel through the proxy on `proxyPort` to the front, and one modern POST sent through it. */
async function tunnelledPost(l: Listener, proxyPort: number, body: unknown): Promise<string> {
  const s: Socket = connect(proxyPort, "127.0.0.1");
  k.cleanup.push(() => void s.destroy());
  let got = "";
  s.on("data", (c: Buffer) => {
    got += c.toString("latin1");
  });
  await new Promise<void>((resolve, reject) => {
    s.once("connect", () => resolve());
    s.once("error", reject);
  });
  s.write(`CONNECT 127.0.0.1:${l.port} HTTP/1.1\r\nhost: 127.0.0.1:${l.port}\r\n\r\n`);
  await waitFor(() => got.includes("\r\n\r\n"), 10_000, "the proxy's answer to CONNECT");
  expect(got).toMatch(/^HTTP\/1\.1 200/);
  got = "";
  const text = JSON.stringify(body);
  const head = Object.entries({
    ...l.headers(),
    host: `127.0.0.1:${l.port}`,
    "content-length": String(Buffer.byteLength(text)),
  })
    .map(([name, v]) => `${name}: ${v}\r\n`)
    .join("");
  s.write(`POST /mcp HTTP/1.1\r\n${head}\r\n${text}`);
  await waitFor(
    () => /^HTTP\/1\.1 \d+/.test(got) || undefined,
    20_000,
    "the front's answer through the tunnel",
  );
  return got;
}

describe.runIf(process.platform === "linux")(
  "a connection tunnelled to the front through a session's egress proxy",
  () => {
    it("is not taken for the gateway's own process, and two such connections share no session", async () => {
      const { hosts } = await k.upstreams();
      const stateDir = newStateDir();
      const dir = k.project(nodeServer, hosts);
      await k.storeHttpSecret(stateDir, ...hosts);
      await k.unlock(stateDir);
      const l = await startListener([], {
        configFile: join(dir, "portcullis.json"),
        label: "api",
        stateDir,
        args: ["--listen", "127.0.0.1:0"],
      });
      k.cleanup.push(() => l.close());
      // a session, so that a server and its egress proxy run
      await openSession(l);
      const proxyPort = Number(
        (
          await waitFor(
            // in a line written whole: a chunk can end inside the port
            () => /egress proxy on http:\/\/127\.0\.0\.1:(\d+)/.exec(wholeLines(l.stderr())),
            20_000,
            "the egress proxy",
          )
        )[1],
      );
      for (const id of [1, 2]) {
        const answer = await tunnelledPost(l, proxyPort, request(id, "server/discover"));
        expect(answer).toMatch(/^HTTP\/1\.1 200/);
      }
      const lines = () =>
        l
          .stderr()
          .split("\n")
          .filter((line) => /http session modern-/.test(line));
      // (the status lines come on another pipe than the answers: waited for)
      const gateway = `from pid ${l.proc.pid}`;
      await waitFor(
        () => lines().length >= 2 || lines().some((line) => line.includes(gateway)),
        10_000,
        "the tunnelled connections' session lines",
      );
      const sessions = lines();
      expect(sessions).toHaveLength(2);
      for (const line of sessions) {
        expect(line).not.toContain(gateway);
        expect(line).toContain("the connecting socket is held by this gateway's own process");
      }
    });
  },
);
