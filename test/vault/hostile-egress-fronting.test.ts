// Domain fronting under `"egress": "declared-only"`, through a real gateway: a server that may
// reach only its declared hosts connects to one that fronts many sites (a CDN, a PaaS router:
// the site that answers is picked from the request's Host or absolute target, not from the
// connection) and names another site in the request. No value is in it, so the rule that a
// request with a released value names its destination did not apply: the request reached a site
// nobody declared, recorded under the declared host. The upstream here records every byte it gets.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";
import { egressKit, exchange, nodeServer, proxyPort, type RawUpstream, rawUpstream } from "./egress-kit.js";

const k = egressKit();
let stateDir: string;
let port: number;
let front: number;
/** the upstream that fronts other sites: it records every byte it gets */
let upstream: RawUpstream;

beforeAll(async () => {
  const { hosts } = await k.upstreams();
  upstream = await rawUpstream();
  k.cleanup.push(() => upstream.close());
  front = upstream.port;
  const declared = [...hosts, `127.0.0.1:${front}`];
  stateDir = newStateDir();
  const dir = k.project(nodeServer, declared, { egress: "declared-only" });
  await k.storeHttpSecret(stateDir, ...declared);
  await k.unlock(stateDir);
  port = await proxyPort(await k.gateway(dir, stateDir));
}, 60_000);

afterAll(() => k.cleanupAll());

/** `first` to the proxy, and `then` once its first answer's head is in; all it said until it closed. */
const ask = (first: string, then?: string) => exchange(port, first, then, 3000);

const lastStatus = (out: string) => out.match(/HTTP\/1\.1 \d{3}/g)?.at(-1);

describe('egress "declared-only" and a request to a declared host naming another site', () => {
  it("gets a 421 and the declared host gets nothing, in a tunnel and in absolute form; its own name still passes", async () => {
    const tunnel = `CONNECT 127.0.0.1:${front} HTTP/1.1\r\nHost: 127.0.0.1:${front}\r\n\r\n`;
    const fronted = [
      ask(tunnel, "GET /fronted-host HTTP/1.1\r\nHost: attacker.example\r\nConnection: close\r\n\r\n"),
      ask(
        tunnel,
        `GET http://attacker.example/fronted-target HTTP/1.1\r\nHost: 127.0.0.1:${front}\r\nConnection: close\r\n\r\n`,
      ),
      ask(
        `GET http://127.0.0.1:${front}/fronted-absolute HTTP/1.1\r\nHost: attacker.example\r\nConnection: close\r\n\r\n`,
      ),
    ];
    for (const out of await Promise.all(fronted)) {
      expect(lastStatus(out)).toBe("HTTP/1.1 421");
      expect(out).toContain('egress "declared-only"');
    }
    expect(upstream.text()).not.toContain("fronted");
    const own = await ask(
      tunnel,
      `GET /own HTTP/1.1\r\nHost: 127.0.0.1:${front}\r\nConnection: close\r\n\r\n`,
    );
    expect(lastStatus(own)).toBe("HTTP/1.1 200");
    expect(upstream.text()).toContain("GET /own HTTP/1.1");
    // the refusals are recorded, under the declared host the connection was for
    const refused = await waitFor(
      async () => {
        const r = await runCli(["egress", "api", "--json"], { stateDir });
        expect(r.code, r.stderr).toBe(0);
        const all = (
          JSON.parse(r.stdout) as { epochs: { destinations: { port: number; refused: number }[] }[] }
        ).epochs.flatMap((e) => e.destinations);
        const n = all.filter((d) => d.port === front).reduce((sum, d) => sum + d.refused, 0);
        return n >= 3 ? n : null;
      },
      10_000,
      "the three refusals recorded",
    );
    expect(refused).toBe(3);
  });
});
