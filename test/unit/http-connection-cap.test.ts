// The cap on the open connections of `run --listen`'s front, the console and the egress proxy
// (src/transport/httpConnections.ts): half the process's soft descriptor limit as
// /proc/self/limits says it (src/identity/procLimits.ts), within [32, 1024]; an eighth for the
// egress proxies of a process together (a quarter of the descriptors: each connection may dial an
// upstream), held by real listeners on loopback through one SharedConnectionCap.
import { connect, createServer, type Server, type Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { openFilesSoftLimit } from "../../src/identity/proc.js";
import { connectionCap, SharedConnectionCap } from "../../src/transport/httpConnections.js";
import { waitFor } from "../helpers/files.js";

const limits = (soft: string, hard = soft) =>
  `Limit                     Soft Limit           Hard Limit           Units     \nMax cpu time              unlimited            unlimited            seconds   \nMax open files            ${soft}                  ${hard}                  files     \n`;

describe("connectionCap", () => {
  it("reads the soft limit on open files; none when unlimited or absent", () => {
    expect(openFilesSoftLimit(limits("200"))).toBe(200);
    expect(openFilesSoftLimit(limits("1024", "4096"))).toBe(1024);
    expect(openFilesSoftLimit(limits("unlimited"))).toBeNull();
    expect(openFilesSoftLimit("Limit  Soft Limit\n")).toBeNull();
    expect(openFilesSoftLimit(null)).toBeNull();
  });

  it("is half the soft limit, at least 32 and at most 1024; 1024 when the limit is not known", () => {
    expect(connectionCap(200)).toBe(100);
    expect(connectionCap(1024)).toBe(512);
    expect(connectionCap(20)).toBe(32);
    expect(connectionCap(1_048_576)).toBe(1024);
    expect(connectionCap(null)).toBe(1024);
  });

  it("counts a connection that may hold two descriptors as two (the egress proxy's)", () => {
    expect(connectionCap(200, 2)).toBe(50);
    expect(connectionCap(1024, 2)).toBe(256);
    expect(connectionCap(100, 2)).toBe(32);
    expect(connectionCap(null, 2)).toBe(1024);
  });

  it("takes a share of the limit when told: the egress proxies' quarter, each connection counted as two", () => {
    expect(connectionCap(200, 2, 1 / 4)).toBe(32);
    expect(connectionCap(1024, 2, 1 / 4)).toBe(128);
    expect(connectionCap(8192, 2, 1 / 4)).toBe(1024);
    expect(connectionCap(null, 2, 1 / 4)).toBe(1024);
  });
});

/** A loopback listener whose connections go through `cap` (what the egress proxy does): the ones it kept. */
async function capped(
  cap: SharedConnectionCap,
  warned: string[],
): Promise<{ server: Server; kept: Socket[] }> {
  const kept: Socket[] = [];
  const server = createServer((s) => {
    if (!cap.admit(s, (line) => warned.push(line))) return;
    kept.push(s);
    s.write("taken\n");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { server, kept };
}

/** What a new connection to `server` reads before it is closed (or after 2 s, when it is not). */
function firstWords(server: Server): Promise<string> {
  return new Promise((resolve) => {
    const s = connect((server.address() as { port: number }).port, "127.0.0.1");
    let got = "";
    const timer = setTimeout(() => {
      s.destroy();
      resolve(got);
    }, 2000);
    s.on("data", (d) => {
      got += d;
      if (got.includes("\n")) {
        clearTimeout(timer);
        resolve(got);
      }
    });
    s.on("error", () => {});
    s.on("close", () => {
      clearTimeout(timer);
      resolve(got);
    });
  });
}

describe("SharedConnectionCap", () => {
  it("holds two listeners' connections together: one past the cap is closed unread whichever it came to, and taken again once one closes", async () => {
    const cap = new SharedConnectionCap(2, "egress");
    const warned: string[] = [];
    const a = await capped(cap, warned);
    const b = await capped(cap, warned);
    try {
      expect(await firstWords(a.server)).toBe("taken\n");
      expect(await firstWords(a.server)).toBe("taken\n");
      expect(cap.open).toBe(2);
      // the other listener is full too, and so is the first
      expect(await firstWords(b.server)).toBe("");
      expect(await firstWords(a.server)).toBe("");
      expect(b.kept).toHaveLength(0);
      expect(warned).toEqual([
        "egress: closed a connection as it was accepted: 2 are open, the most this process's egress listeners hold together",
      ]);
      // one of the first listener's closes: the other takes a new one
      a.kept[0]!.destroy();
      await waitFor(() => cap.open === 1, 2000, "the closed connection counted out");
      expect(await firstWords(b.server)).toBe("taken\n");
      expect(cap.open).toBe(2);
    } finally {
      for (const s of [...a.kept, ...b.kept]) s.destroy();
      await Promise.all([a, b].map(({ server }) => new Promise((r) => server.close(r))));
    }
  });
});
