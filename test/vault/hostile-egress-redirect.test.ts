// A declared host that redirects keeping the request's query (as `http://` to `https://`, a bare
// domain to `www.`, or an old path to a new one do): the released value is in the URL it got,
// and so in the `Location` it answers with. HTTP clients follow a redirect on their own, so the
// server's fetch would carry the value, as it got it, to wherever `Location` says, another host
// included, and hold it meanwhile. Through a real gateway and its server (global fetch, which
// follows redirects): the proxy puts the placeholder back into `Location`, so a redirect to
// another host carries the placeholder, one to the declared host gets the value again from the
// proxy; and a raw absolute-form request (the proxy's other path) gets the same `Location`.
import { writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { connect } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { wholeLines } from "../helpers/completeLines.js";
import { tempDir, waitFor } from "../helpers/files.js";
import { newStateDir } from "../helpers/state.js";
import { approvedCall, egressKit, nodeServer, PLACEHOLDER, SECRET, text } from "./egress-kit.js";

const k = egressKit();
afterEach(() => k.cleanupAll());

/** Redirects /hop-away to `away`/landed and /hop-home to /home, each keeping the query; records keys. */
async function redirector(away: string) {
  const received: { path: string; key: string | null }[] = [];
  const server: Server = createServer((req, res) => {
    const u = new URL(req.url ?? "/", "http://x");
    received.push({ path: u.pathname, key: u.searchParams.get("key") });
    if (u.pathname === "/hop-away") res.writeHead(302, { location: `${away}/landed${u.search}` }).end();
    else if (u.pathname === "/hop-home") res.writeHead(301, { Location: `/home${u.search}` }).end();
    else res.writeHead(200, { "content-type": "text/plain" }).end(`home ${u.pathname}`);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  k.cleanup.push(() => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  return { port, url: `http://127.0.0.1:${port}`, received };
}

describe("a declared host's redirect that keeps the query", () => {
  it("never carries the released value back: another host gets the placeholder, the declared one the value again", async () => {
    const { plain, other, hosts } = await k.upstreams();
    const r = await redirector(other.url);
    const declared = [...hosts, `127.0.0.1:${r.port}`];
    const stateDir = newStateDir();
    const dir = k.project(nodeServer, declared);
    await k.storeHttpSecret(stateDir, ...declared);
    await k.unlock(stateDir);
    const gw = await k.gateway(dir, stateDir);
    const seen = new Set<string>();

    // fetch follows the 302 to the other (undeclared) host: it gets the placeholder
    const away = await approvedCall(gw, stateDir, "fetch_url", { url: `${r.url}/hop-away` }, seen);
    expect(text(away)).toBe("200 upstream ok /landed");
    expect(r.received.find((x) => x.path === "/hop-away")?.key === SECRET).toBe(true);
    expect(other.received.map((x) => [x.path, x.key])).toEqual([["/landed", PLACEHOLDER]]);
    expect(other.received.some((x) => x.authorization?.includes(SECRET))).toBe(false);

    // a redirect within the declared host: the proxy releases the value to it again
    const home = await approvedCall(gw, stateDir, "fetch_url", { url: `${r.url}/hop-home` }, seen);
    expect(text(home)).toBe("200 home /home");
    expect(r.received.filter((x) => x.path === "/home").map((x) => x.key === SECRET)).toEqual([true]);

    // the absolute-form path (node:http sends http:// so), while a call holds the window open
    const done = join(tempDir("portcullis-redirect-"), "done");
    const held = approvedCall(gw, stateDir, "fetch_url", { url: `${plain.url}/open`, after: done }, seen);
    await waitFor(() => plain.received.some((x) => x.path === "/open"), 20_000, "the held call's request");
    // waited for in a line written whole: stderr is read at its own pace, and a chunk can end inside the port
    const port = Number(
      (
        await waitFor(
          () => /egress proxy on http:\/\/127\.0\.0\.1:(\d+)/.exec(wholeLines(gw.stderr())) ?? undefined,
          20_000,
          "the egress proxy's port",
        )
      )[1],
    );
    const answer = await new Promise<string>((resolve) => {
      const s = connect(port, "127.0.0.1");
      let out = "";
      s.on("data", (d: Buffer) => {
        out += d.toString("latin1");
      });
      s.on("close", () => resolve(out));
      s.on("error", () => resolve(out));
      s.write(
        `GET ${r.url}/hop-away?key=portcullis-placeholder%3Ainventory-api HTTP/1.1\r\nHost: 127.0.0.1:${r.port}\r\nConnection: close\r\n\r\n`,
      );
    });
    writeFileSync(done, "");
    await held;
    expect(r.received.filter((x) => x.path === "/hop-away").map((x) => x.key === SECRET)).toEqual([
      true,
      true,
    ]);
    const location = /\r\nlocation: ([^\r]*)/i.exec(answer)?.[1] ?? "";
    // (the value has nothing to escape: as written and URL-encoded it is one spelling, given
    // back as the placeholder as written)
    expect(location).toBe(`${other.url}/landed?key=${PLACEHOLDER}`);
    expect(answer.includes(SECRET)).toBe(false);
  });
});
