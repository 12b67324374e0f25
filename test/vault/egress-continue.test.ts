// A request that asks `Expect: 100-continue` and sends its body only once told to: the upstream's
// 100 Continue reaches the client (in a tunnel, passed on as the upstream sent it; in absolute
// form, Node's server says it for the proxy, which then carries the body on), the body follows,
// and the final answer comes back, recorded `forwarded` with its final status (never the 100).
// In-process proxy, a real TCP upstream that says 100 Continue and answers once the body is whole.
import { afterAll, beforeAll, expect, it } from "vitest";
import { waitFor } from "../helpers/files.js";
import { type RawProxy, rawClient, rawProxy, recordsSince } from "./rawProxyKit.js";

/** How long an awaited event may take before the test says which never came (no duration is asserted). */
const BOUND = 5000;

let p: RawProxy;

beforeAll(async () => {
  p = await rawProxy((s) => {
    let got = "";
    let want: number | null = null;
    s.on("data", (d: Buffer) => {
      got += d.toString("latin1");
      if (want === null) {
        const end = got.indexOf("\r\n\r\n");
        if (end < 0) return;
        const head = got.slice(0, end);
        want = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
        got = got.slice(end + 4);
        if (/\r\nexpect: 100-continue/i.test(head)) s.write("HTTP/1.1 100 Continue\r\n\r\n");
      }
      if (got.length < want) return;
      s.write(`HTTP/1.1 201 Created\r\nContent-Length: ${want}\r\n\r\n${got.slice(0, want)}`);
      got = got.slice(want);
      want = null;
    });
  }, BOUND);
});

afterAll(async () => {
  await p?.close();
});

for (const how of ["tunnel", "absolute"] as const) {
  it(`${how}: the 100 Continue reaches the client before it sends the body, then the final answer; forwarded 201`, async () => {
    const before = p.records.length;
    const c = await rawClient(p, how, BOUND);
    const s = c.s;
    try {
      s.write(
        `POST ${c.target("/upload")} HTTP/1.1\r\nHost: ${p.host}\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n`,
      );
      await waitFor(() => c.read().includes("\r\n\r\n"), BOUND, "the 100 Continue");
      expect(c.read()).toBe("HTTP/1.1 100 Continue\r\n\r\n");
      s.write("hello");
      await waitFor(() => c.read().endsWith("hello"), BOUND, "the final answer");
      expect(c.read()).toMatch(
        /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 201 Created\r\n[\s\S]*\r\n\r\nhello$/,
      );
    } finally {
      s.destroy();
    }
    await waitFor(() => p.records.length > before || null, BOUND, "the record");
    expect(recordsSince(p.records, before)).toEqual([["POST", "forwarded", 201]]);
  });
}
