// The process behind a loopback connection, found from the kernel's socket tables
// (identity/proc.ts pidOfTcpPeer): this process's own socket, and a child's.
import { spawn } from "node:child_process";
import { createServer, type Server, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { pidOfTcpPeer } from "../../src/identity/proc.js";
import { NODE } from "../helpers/paths.js";

let server: Server | null = null;
afterEach(() => {
  server?.close();
  server = null;
});

function listen(): Promise<{ port: number; accepted: Promise<Socket> }> {
  return new Promise((resolve) => {
    let accept: (s: Socket) => void = () => {};
    const accepted = new Promise<Socket>((r) => {
      accept = r;
    });
    server = createServer((s) => accept(s));
    server.listen(0, "127.0.0.1", () =>
      resolve({ port: (server!.address() as { port: number }).port, accepted }),
    );
  });
}

/** The process on the other end of accepted socket `s`. */
function peer(s: Socket, theirs?: { address: string; port: number }): number | null {
  return pidOfTcpPeer(
    { address: s.localAddress!, port: s.localPort! },
    theirs ?? { address: s.remoteAddress!, port: s.remotePort! },
  );
}

describe.runIf(process.platform === "linux")("pidOfTcpPeer", () => {
  it("finds this process behind its own loopback connection", async () => {
    const { port, accepted } = await listen();
    const { createConnection } = await import("node:net");
    const client = createConnection(port, "127.0.0.1");
    const s = await accepted;
    expect(peer(s)).toBe(process.pid);
    client.destroy();
    s.destroy();
  });

  it("finds a child process behind its connection, and nothing for a port nobody holds", async () => {
    const { port, accepted } = await listen();
    const child = spawn(
      NODE,
      ["-e", `require("node:net").createConnection(${port}, "127.0.0.1"); setTimeout(() => {}, 30000)`],
      { stdio: "ignore" },
    );
    try {
      const s = await accepted;
      expect(peer(s)).toBe(child.pid);
      expect(peer(s, { address: "127.0.0.1", port: 1 })).toBeNull();
      s.destroy();
    } finally {
      child.kill("SIGKILL");
    }
  });
});
