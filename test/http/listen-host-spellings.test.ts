// `run --listen` on an address written in a form the URL parser writes otherwise: fetch() of the
// printed URL sends Host as the WHATWG URL parser serialises it (`[::ffff:127.0.0.1]` becomes
// `[::ffff:7f00:1]`), and that Host must be taken for this server, as must every other spelling of
// the same address, while a name other than localhost is still refused (DNS rebinding). Real
// gateway processes, real fetch(). The rule itself, searched: test/transport/host-check.property.test.ts.
import { afterEach, describe, expect, it } from "vitest";
import { fixtureCommand } from "../helpers/paths.js";
import { type Listener, startListener } from "./listen.js";
import { initializeBody, raw } from "./raw.js";

let open: Listener[] = [];
afterEach(async () => {
  for (const l of open) await l.close();
  open = [];
});

async function listener(address: string): Promise<Listener> {
  const l = await startListener(fixtureCommand("echo"), { address, args: ["--no-auth"] });
  open.push(l);
  return l;
}

/** An initialize POSTed with fetch() to `url`: the Host is the one fetch() writes for it. */
async function fetchStatus(url: string): Promise<number> {
  const r = await fetch(url, {
    method: "POST",
    headers: { accept: "application/json, text/event-stream", "content-type": "application/json" },
    body: initializeBody(),
  });
  await r.body?.cancel();
  return r.status;
}

describe("run --listen: the Host a client sends for any spelling of the address", () => {
  it("[::ffff:127.0.0.1]: the printed URL is the one fetch() sends; each spelling gets 200, another name 403", async () => {
    const l = await listener("[::ffff:127.0.0.1]:0");
    for (const host of [
      "[::ffff:7f00:1]",
      "[::ffff:127.0.0.1]",
      "[0:0:0:0:0:ffff:7f00:1]",
      "[::FFFF:127.0.0.1]",
      "127.0.0.1",
    ])
      expect(await fetchStatus(`http://${host}:${l.port}/mcp`), host).toBe(200);
    // printed in the form clients send
    expect(l.url).toBe(`http://[::ffff:7f00:1]:${l.port}/mcp`);
    // the Host as the address was given, and the loopback names, written by hand
    for (const host of ["[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "localhost", "127.0.0.1"]) {
      const r = await raw(l, {
        headers: { ...l.headers(), host: `${host}:${l.port}` },
        body: initializeBody(),
      });
      expect(r.status, host).toBe(200);
    }
    // still only this server: a rebinding name, another address, another port
    for (const host of [
      `evil.example:${l.port}`,
      `localhost.evil.example:${l.port}`,
      `[::ffff:7f00:2]:${l.port}`,
      `[::ffff:c000:20a]:${l.port}`,
      `[::ffff:7f00:1]:${l.port + 1}`,
    ]) {
      const r = await raw(l, { headers: { ...l.headers(), host }, body: initializeBody() });
      expect(r.status, host).toBe(403);
    }
  });

  it("[0:0:0:0:0:0:0:1]: printed as [::1], which fetch() sends and is taken", async () => {
    const l = await listener("[0:0:0:0:0:0:0:1]:0");
    expect(l.url).toBe(`http://[::1]:${l.port}/mcp`);
    for (const host of ["[::1]", "[0::1]", "[0:0:0:0:0:0:0:1]"])
      expect(await fetchStatus(`http://${host}:${l.port}/mcp`), host).toBe(200);
    const r = await raw(l, {
      host: "::1",
      headers: { ...l.headers(), host: `evil.example:${l.port}` },
      body: initializeBody(),
    });
    expect(r.status).toBe(403);
  });
});
