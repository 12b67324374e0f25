// A request whose body comes with its head, in one write, into a tunnel to a declared host: the
// proxy reads on while it prepares the request (the release rule, a connection to the upstream),
// keeping what comes, and pauses the client once that is more than a head's worth (64 KiB). Once
// the request is sent, the kept part goes after it and the client must flow again. Before,
// nothing resumed it: a body over 64 KiB sent in one go stalled, and the upstream, waiting for
// the rest, timed out (a 504, recorded failed). Also a chunked body, and one followed by a
// pipelined request. In-process proxy, a real TCP upstream that answers once the body is whole.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EgressRecord } from "../../src/vault/egress/proxy.js";
import { waitFor } from "../helpers/files.js";
import { type RawProxy, rawClient, rawProxy, recordsSince } from "./rawProxyKit.js";

/** How long an awaited event may take before the test says which never came (no duration is asserted). */
const BOUND = 5000;
const SIZE = 1024 * 1024;

let p: RawProxy;
let host: string;
let records: EgressRecord[];

beforeAll(async () => {
  // answers each request, once its body is whole (by its length or its last chunk), with how many
  // bytes of body it got
  p = await rawProxy((s) => {
    let got = Buffer.alloc(0);
    s.on("data", (d: Buffer) => {
      got = Buffer.concat([got, d]);
      for (;;) {
        const end = got.indexOf("\r\n\r\n");
        if (end < 0) return;
        const head = got.subarray(0, end).toString("latin1");
        let body: number;
        let taken: number;
        if (/\r\ntransfer-encoding: chunked/i.test(head)) {
          const last = got.indexOf("\r\n0\r\n\r\n", end + 2);
          if (last < 0) return;
          taken = last + 7;
          body = got.subarray(end + 4, last).length;
        } else {
          body = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
          taken = end + 4 + body;
          if (got.length < taken) return;
        }
        got = got.subarray(taken);
        const said = `${head.split(" ")[1]} ${body}`;
        s.write(`HTTP/1.1 200 OK\r\nContent-Length: ${said.length}\r\n\r\n${said}`);
      }
    });
  }, BOUND);
  ({ host, records } = p);
});

afterAll(async () => {
  await p?.close();
});

/** Opens a tunnel, writes `request` in one write, and reads until `until` matches what came back. */
async function tunnel(request: Buffer, until: RegExp): Promise<string> {
  const { s, read } = await rawClient(p, "tunnel", BOUND);
  s.write(request);
  try {
    await waitFor(() => until.test(read()), BOUND, `an answer matching ${until}`);
  } finally {
    s.destroy();
  }
  return read();
}

const since = (before: number) => recordsSince(records, before);

describe("a request body that comes with its head, in one write", () => {
  it("with a length: all of it reaches the upstream and the answer comes back; forwarded", async () => {
    const before = records.length;
    const read = await tunnel(
      Buffer.concat([
        Buffer.from(`POST /length HTTP/1.1\r\nHost: ${host}\r\nContent-Length: ${SIZE}\r\n\r\n`),
        Buffer.alloc(SIZE, 0x61),
      ]),
      /\/length \d+$/,
    );
    expect(read).toMatch(new RegExp(`^HTTP/1\\.1 200 OK\\r\\n[\\s\\S]*\\r\\n\\r\\n/length ${SIZE}$`));
    await waitFor(() => records.length > before || null, BOUND, "the record");
    expect(since(before)).toEqual([["POST", "forwarded", 200]]);
  });

  it("chunked, and a pipelined request after it: both answered, in order", async () => {
    const before = records.length;
    const chunk = Buffer.alloc(64 * 1024, 0x62);
    const chunks = Array.from({ length: 16 }, () => [
      Buffer.from("10000\r\n"),
      chunk,
      Buffer.from("\r\n"),
    ]).flat();
    const read = await tunnel(
      Buffer.concat([
        Buffer.from(`POST /chunked HTTP/1.1\r\nHost: ${host}\r\nTransfer-Encoding: chunked\r\n\r\n`),
        ...chunks,
        Buffer.from(`0\r\n\r\nGET /after HTTP/1.1\r\nHost: ${host}\r\n\r\n`),
      ]),
      /\/after 0$/,
    );
    // (the upstream counts a chunked body's bytes with their framing)
    expect(read).toMatch(
      /^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\n\/chunked \d+HTTP\/1\.1 200 OK\r\n[\s\S]*\/after 0$/,
    );
    await waitFor(() => records.length >= before + 2 || null, BOUND, "the records");
    expect(since(before)).toEqual([
      ["POST", "forwarded", 200],
      ["GET", "forwarded", 200],
    ]);
  });
});
