// A client that holds many connections open with half a request written on each (slowloris):
// what the tests of the connection caps share (test/http/hostile-connection-flood.test.ts,
// test/console/hostile-connection-flood.test.ts, test/vault/hostile-egress-connection-flood.test.ts).
import { readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { waitFor } from "./files.js";

/** The descriptor limit the process under test runs with, and a flood of twice as many connections: past any cap it could pick. */
export const FILES = 200;
export const FLOOD = 2 * FILES;
/** The command the process under test runs under: `prlimit --nofile=FILES:FILES --`. */
export const UNDER_FILE_LIMIT = ["prlimit", `--nofile=${FILES}:${FILES}`, "--"];

/**
 * `n` connections to 127.0.0.1:`port` that each write `half` (the start of a request, never its
 * end) and then nothing, once each is open or closed (one past a cap is closed as accepted).
 */
export async function holdConnections(port: number, n: number, half: string): Promise<Socket[]> {
  const sockets: Socket[] = [];
  for (let i = 0; i < n; i++) {
    const s = connect(port, "127.0.0.1");
    s.on("error", () => {});
    s.write(half);
    sockets.push(s);
  }
  await Promise.all(
    sockets.map(
      (s) =>
        new Promise<void>((r) => (s.readyState === "open" ? r() : s.once("connect", r).once("close", r))),
    ),
  );
  return sockets;
}

/**
 * Waits until the listener on 127.0.0.1:`port` has accepted every connection made to it (its
 * accept queue, the rx_queue of its LISTEN row in /proc/net/tcp, is empty): only then has a flood
 * filled the process's descriptors as far as it can (a process that reads something per
 * connection takes them in one at a time, and connections wait in the kernel's queue meanwhile).
 */
export async function floodTakenIn(port: number, ms = 20_000): Promise<void> {
  const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, "0")}`;
  await waitFor(
    () => {
      const row = readFileSync("/proc/net/tcp", "utf8")
        .split("\n")
        .map((l) => l.trim().split(/\s+/))
        .find((f) => f[1] === local && f[3] === "0A");
      if (row === undefined) throw new Error(`no listener on 127.0.0.1:${port} in /proc/net/tcp`);
      return Number.parseInt(row[4]!.split(":")[1]!, 16) === 0;
    },
    ms,
    `the listener on 127.0.0.1:${port} to accept every connection queued`,
  );
}
