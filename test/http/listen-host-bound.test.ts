// `run --listen`: a Host (and an Origin) must name an address the front's socket is bound to, as
// the console's must (one rule, hostsOfSockets). A loopback listen address used to take
// `localhost`, `127.0.0.1` and `[::1]` whatever it was, so a front on 127.0.0.1 alone took a
// request naming `[::1]`, an address nothing of it holds. Real gateway processes, plain HTTP
// with the Host and Origin written by hand. The rule itself, searched:
// test/transport/host-check.property.test.ts.
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { networkInterfaces } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasIpv6Loopback } from "../console/helpers.js";
import { fixtureCommand } from "../helpers/paths.js";
import { type Listener, startListener } from "./listen.js";
import { expectRpcError, initializeBody, raw } from "./raw.js";

// Every front is started at once (each start takes about a second), and each test takes its own.
const started = new Map<string, Promise<Listener>>();
beforeAll(async () => {
  const addresses = ["127.0.0.1:0", "localhost:0", "0.0.0.0:0"];
  if (await hasIpv6Loopback()) addresses.push("[::1]:0");
  if (process.platform === "linux") addresses.push("127.0.0.5:0");
  // a token on 0.0.0.0: --no-auth is for loopback addresses only
  for (const address of addresses)
    started.set(
      address,
      startListener(fixtureCommand("echo"), {
        address,
        args: address.startsWith("0.0.0.0") ? [] : ["--no-auth"],
      }),
    );
  await Promise.allSettled(started.values());
});
afterAll(async () => {
  for (const l of await Promise.allSettled(started.values()))
    if (l.status === "fulfilled") await l.value.close();
});

function listener(address: string): Promise<Listener> {
  return started.get(address)!;
}

/**
 * A request sent to `connectTo` with `host` (and `origin`) as the Host (and Origin): whether the
 * Host and Origin check let it past. It asks for a path the front does not serve, so one let past
 * is answered 404 at once (no session, no server started); one refused gets the 403 of DNS
 * rebinding protection, which comes first.
 */
async function passes(l: Listener, connectTo: string, host: string, origin?: string): Promise<boolean> {
  const headers = { ...l.headers(), host: `${host}:${l.port}`, ...(origin ? { origin } : {}) };
  const r = await raw(l, { host: connectTo, path: "/elsewhere", headers, body: initializeBody() });
  if (r.status === 403) expectRpcError(r, /is not this server: refused \(DNS rebinding protection\)/);
  else expect(r.status, r.body).toBe(404);
  return r.status !== 403;
}

describe("run --listen: Host names an address the front is bound to", () => {
  it("on 127.0.0.1: 127.0.0.1 and localhost are taken; [::1], which it does not hold, is refused", async () => {
    const l = await listener("127.0.0.1:0");
    for (const host of ["127.0.0.1", "localhost", "LOCALHOST", "[::ffff:7f00:1]"])
      expect(await passes(l, "127.0.0.1", host), host).toBe(true);
    for (const host of ["[::1]", "[0::1]", "[0:0:0:0:0:0:0:1]", "127.0.0.2", "evil.example"])
      expect(await passes(l, "127.0.0.1", host), host).toBe(false);
    // the Origin of a page at [::1] is no page of this front either
    expect(await passes(l, "127.0.0.1", "127.0.0.1", `http://[::1]:${l.port}`)).toBe(false);
    expect(await passes(l, "127.0.0.1", "127.0.0.1", `http://localhost:${l.port}`)).toBe(true);
  });

  it("on [::1]: [::1] and localhost are taken; 127.0.0.1, which it does not hold, is refused", async () => {
    if (!started.has("[::1]:0")) return; // no IPv6 loopback here
    const l = await listener("[::1]:0");
    for (const host of ["[::1]", "[0::1]", "localhost"])
      expect(await passes(l, "::1", host), host).toBe(true);
    for (const host of ["127.0.0.1", "[::ffff:7f00:1]", "evil.example"])
      expect(await passes(l, "::1", host), host).toBe(false);
    expect(await passes(l, "::1", "[::1]", `http://127.0.0.1:${l.port}`)).toBe(false);
  });

  it.runIf(process.platform === "linux")(
    "on 127.0.0.5 (Linux routes all of 127/8 to loopback): only 127.0.0.5; localhost stands for 127.0.0.1 and ::1, not it",
    async () => {
      const l = await listener("127.0.0.5:0");
      for (const host of ["127.0.0.5", "[::ffff:7f00:5]"])
        expect(await passes(l, "127.0.0.5", host), host).toBe(true);
      for (const host of ["localhost", "127.0.0.1", "[::1]"])
        expect(await passes(l, "127.0.0.5", host), host).toBe(false);
    },
  );

  it("on localhost: the address it resolved to and localhost; not the other loopback address", async () => {
    const l = await listener("localhost:0");
    // what the front bound (node resolves the name as this lookup does: its first answer)
    const bound = (await lookup("localhost")).address;
    const [own, other] = isIP(bound) === 6 ? ["[::1]", "127.0.0.1"] : ["127.0.0.1", "[::1]"];
    const connectTo = own.replace(/^\[(.*)\]$/, "$1");
    for (const host of [own, "localhost"]) expect(await passes(l, connectTo, host), host).toBe(true);
    expect(await passes(l, connectTo, other)).toBe(false);
  });

  it("on 0.0.0.0: the machine's IPv4 addresses and localhost; an IPv6 address, which an IPv4 socket does not take, is refused", async () => {
    const l = await listener("0.0.0.0:0");
    const v4 = Object.values(networkInterfaces())
      .flatMap((list) => list ?? [])
      .filter((a) => isIP(a.address) === 4)
      .map((a) => a.address);
    for (const host of ["localhost", "0.0.0.0", ...v4])
      expect(await passes(l, "127.0.0.1", host), host).toBe(true);
    for (const host of ["[::1]", "evil.example"])
      expect(await passes(l, "127.0.0.1", host), host).toBe(false);
  });
});
