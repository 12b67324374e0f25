// Who is on the other end of a loopback TCP connection (src/identity/proc.ts, pidOfTcpPeer), as
// `run --listen` asks for each client: by the whole of both ends, addresses included. Another
// process that binds the same source port on another loopback address (127.0.0.2) must not be
// taken for the first one (it would join that client's session and use its approvals).
import { spawn } from "node:child_process";
import { connect, createServer, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { pidOfTcpPeer, procNetEnds, tcpPeerUid } from "../../src/identity/proc.js";
import { waitFor } from "../helpers/files.js";
import { NODE } from "../helpers/paths.js";

let cleanup: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanup.reverse()) c();
  cleanup = [];
});

describe("the other end of a loopback connection", () => {
  it("spells ends as /proc/net/tcp and tcp6 do", () => {
    expect(procNetEnds({ address: "127.0.0.1", port: 8080 })).toEqual([
      "0100007F:1F90",
      "0000000000000000FFFF00000100007F:1F90",
    ]);
    expect(procNetEnds({ address: "::ffff:127.0.0.2", port: 1 })).toEqual([
      "0200007F:0001",
      "0000000000000000FFFF00000200007F:0001",
    ]);
    expect(procNetEnds({ address: "::1", port: 443 })).toEqual(["00000000000000000000000001000000:01BB"]);
    expect(procNetEnds({ address: "not an address", port: 1 })).toEqual([]);
  });

  it.runIf(process.platform === "linux")(
    "is told apart from a process on 127.0.0.2 with the same source port",
    async () => {
      const accepted: Socket[] = [];
      const server = createServer((s) => accepted.push(s));
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
      cleanup.push(() => server.close());
      const port = (server.address() as { port: number }).port;
      // The first client: this process.
      const mine = connect({ host: "127.0.0.1", port });
      cleanup.push(() => mine.destroy());
      await new Promise<void>((r) => mine.once("connect", () => r()));
      const sourcePort = mine.localPort!;
      // Another process binds that source port on 127.0.0.2 and connects to the same server.
      const other = spawn(
        NODE,
        [
          "-e",
          `const s=require("node:net").connect({host:"127.0.0.1",port:${port},localAddress:"127.0.0.2",localPort:${sourcePort}});` +
            `s.on("connect",()=>console.log("up"));setTimeout(()=>{},30000)`,
        ],
        { stdio: ["ignore", "pipe", "inherit"] },
      );
      cleanup.push(() => other.kill("SIGKILL"));
      await new Promise<void>((r) => other.stdout!.once("data", () => r()));
      // a client's connect is no sign that this process's server has accepted it yet
      await waitFor(() => accepted.length >= 2, 10_000, "the server to accept both clients").catch(
        () => null,
      );
      expect(accepted).toHaveLength(2);
      const peerOf = (s: Socket) =>
        pidOfTcpPeer(
          { address: s.localAddress!, port: s.localPort! },
          { address: s.remoteAddress!, port: s.remotePort! },
        );
      const byAddress = new Map(accepted.map((s) => [s.remoteAddress, peerOf(s)]));
      expect(byAddress.get("127.0.0.1")).toBe(process.pid);
      expect(byAddress.get("127.0.0.2")).toBe(other.pid);
    },
  );
  // Each file is read only where the end can be listed (an end spelled only in IPv6 is in tcp6
  // alone) and tcp6 only when tcp did not list it: a client of each family, through a dual-stack
  // listener (an IPv4 client as ::ffff:127.0.0.1 there), must still be found, by pid and by uid.
  it.runIf(process.platform === "linux")("is found whatever the families of the two sockets", async () => {
    const accepted: Socket[] = [];
    const server = createServer((s) => accepted.push(s));
    await new Promise<void>((r) => server.listen(0, "::", r));
    cleanup.push(() => server.close());
    const port = (server.address() as { port: number }).port;
    const clients = [
      connect({ host: "127.0.0.1", port, family: 4 }),
      connect({ host: "::1", port, family: 6 }),
      connect({ host: "::ffff:127.0.0.1", port, family: 6 }),
    ];
    for (const c of clients) {
      cleanup.push(() => c.destroy());
      await new Promise<void>((r) => c.once("connect", () => r()));
    }
    // a client's connect is no sign that the server has accepted it yet
    await waitFor(() => accepted.length >= 3, 10_000, "the server to accept the three clients").catch(
      () => null,
    );
    expect(accepted).toHaveLength(3);
    const ends = (s: Socket) =>
      [
        { address: s.localAddress!, port: s.localPort! },
        { address: s.remoteAddress!, port: s.remotePort! },
      ] as const;
    expect(accepted.map((s) => s.remoteAddress).sort()).toEqual([
      "::1",
      "::ffff:127.0.0.1",
      "::ffff:127.0.0.1",
    ]);
    for (const s of accepted) {
      expect(pidOfTcpPeer(...ends(s))).toBe(process.pid);
      expect(tcpPeerUid(...ends(s))).toBe(process.getuid!());
    }
    // and from the clients' side, the listener's end
    for (const c of clients) {
      const ours = { address: c.localAddress!, port: c.localPort! };
      const theirs = { address: c.remoteAddress!, port: c.remotePort! };
      expect(pidOfTcpPeer(ours, theirs)).toBe(process.pid);
    }
  });
});
