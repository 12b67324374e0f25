// An upstream that answers a request before it has read its body (a 413 for an upload too large)
// and then closes its connection with the rest of the body unread: its kernel resets the
// connection, and the proxy's next write of the body fails. The answer the upstream wrote before
// is still waiting to be read, and the client gets it, recorded `forwarded` with its status. In
// absolute form (`http://` and `https://` URLs sent to the proxy), through a real gateway's proxy
// and real upstreams written with node:http and node:https, this process the client. Before,
// Node's socket took the failed write for the connection's end and destroyed it unread: the
// client got a 502 ("write ECONNRESET") for a request the upstream had answered, recorded
// `failed`. (While the proxy's feature test of that way still runs, or is held:
// hostile-egress-reset-after-answer-loaded.test.ts; tunnels: hostile-egress-tunnel-reset.test.ts.)
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Gw } from "./egress-kit.js";
import { recordingProxy } from "./egress-preloaded-proxy.js";
import { ROUNDS, recordsOf, resetUpstreams, upload } from "./egress-reset-kit.js";

let upstreams: Awaited<ReturnType<typeof resetUpstreams>>;
let stateDir: string;
let gw: Gw;
let port: number;

beforeAll(async () => {
  upstreams = await resetUpstreams();
  // no credential: a proxy of its own all the same, which reads absolute-form requests
  ({ gw, port, stateDir } = await recordingProxy("portcullis-reset-", {
    env: { NODE_EXTRA_CA_CERTS: upstreams.tls.caFile },
  }));
}, 30_000);

afterAll(async () => {
  await gw?.close();
  await upstreams?.close();
});

for (const scheme of ["http", "https"] as const) {
  it(`${scheme}://: the answer the upstream wrote before resetting reaches the client; forwarded`, async () => {
    const upstreamPort = scheme === "http" ? upstreams.plainPort : upstreams.tls.port;
    for (let round = 0; round < ROUNDS; round++) {
      const read = await upload(`${scheme}://127.0.0.1:${upstreamPort}`, port);
      expect(read).toMatch(/^HTTP\/1\.1 413 [^\r]*\r\n/);
      expect(read).toMatch(/\r\n\r\ntoo long$/);
    }
    expect(await recordsOf(upstreamPort, stateDir)).toEqual([["forwarded", 413, ROUNDS]]);
  });
}
