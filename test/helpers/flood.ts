// What the flood tests share (test/gateway/stdout-flood.test.ts, test/http/upstream-flood.test.ts,
// test/http/listen-flood.test.ts): a server writes notifications faster than the client reads, and
// the gateway must make it wait.
import { existsSync, readFileSync } from "node:fs";
import type { Readable } from "node:stream";
import { waitFor } from "./files.js";

export interface FloodAnswer {
  result?: { content?: { text?: string }[] };
  error?: unknown;
}

/** What the client read: the seq of every notifications/message in order, and the answers by id. */
export interface FloodSeen {
  seqs: number[];
  answers: Map<unknown, FloodAnswer>;
}

/**
 * Reads the gateway's stdout as the client (or, `sse`, an HTTP response's SSE stream: the `data:`
 * lines of its events): only what the tests need of each message is kept (tens of MiB of
 * notifications pass through).
 */
export function readFlood(stdout: Readable, sse = false): FloodSeen {
  const seen: FloodSeen = { seqs: [], answers: new Map() };
  let partial = "";
  stdout.setEncoding("utf8");
  stdout.on("data", (chunk: string) => {
    const lines = (partial + chunk).split("\n");
    partial = lines.pop() ?? "";
    for (let line of lines) {
      if (sse) {
        if (!line.startsWith("data: ")) continue; // the event's id and type, the blank line after
        line = line.slice(6);
      }
      const m = JSON.parse(line) as FloodAnswer & {
        id?: unknown;
        method?: string;
        params?: { data?: { seq?: number } };
      };
      if (m.method === "notifications/message") seen.seqs.push(m.params?.data?.seq ?? -1);
      else if (m.id !== undefined && m.method === undefined) seen.answers.set(m.id, m);
    }
  });
  return seen;
}

export interface FloodProgress {
  written: number;
  done: boolean;
}

/**
 * The fixture's progress file ({written, done}, rewritten every 100 ms), as last read whole: a read
 * in the middle of a write keeps the previous reading.
 */
export function floodProgress(path: string): () => FloodProgress | null {
  let last: FloodProgress | null = null;
  return () => {
    try {
      if (existsSync(path)) last = JSON.parse(readFileSync(path, "utf8")) as FloodProgress;
    } catch {}
    return last;
  };
}

/**
 * Resolves with the progress once it stayed put for a second (the server's writes stopped being
 * taken) or the server is done (then the gateway took everything: the caller's expectations fail).
 */
export function serverHeld(progress: () => FloodProgress | null): Promise<FloodProgress> {
  let last = -1;
  return waitFor(
    async () => {
      const now = progress();
      if (now?.done) return now;
      const same = now !== null && now.written === last;
      last = now?.written ?? -1;
      await new Promise((r) => setTimeout(r, 1000));
      return same ? now : undefined;
    },
    60_000,
    "the server's writes to stop being taken",
  );
}
