// A client's FIN while the proxy prepares its request (the release rule asks the vault holder, a
// connection to the upstream is made), the request short of its body: it can never be finished,
// and nothing of it is sent, so its head never reaches the upstream with the credential in it;
// the client gets a 400 saying why, and the request is recorded `failed`. A request that the
// bytes the proxy holds make whole, FIN or not, goes out with the value and is answered. In a
// tunnel (plain HTTP through it) and in absolute form, through a real gateway while a granted call
// holds the release window open, this process playing the server; the vault holder (a real
// process) is stopped (SIGSTOP) while the FIN comes, so that the request is certainly still being
// prepared, and let go once the proxy has answered the FIN. Before, in a tunnel, the head, the
// released value in it, and the body so far went to the upstream once prepared, then were cut.
import { readdirSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLOSED_MID_REQUEST } from "../../src/vault/egress/exchange.js";
import { auditEvents } from "../helpers/approvals.js";
import { tempDir, waitFor } from "../helpers/files.js";
import { newStateDir } from "../helpers/state.js";
import {
  approvedCall,
  egressKit,
  nodeServer,
  PLACEHOLDER,
  proxyPort,
  type RawUpstream,
  rawUpstream,
  released,
  SECRET,
} from "./egress-kit.js";
import { httpUpstream } from "./egress-upstreams.js";

/** How long an awaited event may take before the test says which never came (no duration is asserted). */
const BOUND = 10_000;
const k = egressKit();
let stateDir: string;
let port: number;
let endCall: () => Promise<void>;
/** one upstream per case: each is the first request to its host in the call, so its release asks the holder */
const targets = new Map<string, RawUpstream>();
const CASES = ["tunnel-cut", "absolute-cut", "tunnel-whole", "absolute-whole"] as const;

beforeAll(async () => {
  const open = await httpUpstream();
  k.cleanup.push(() => open.close());
  for (const c of CASES) {
    const t = await rawUpstream();
    targets.set(c, t);
    k.cleanup.push(() => t.close());
  }
  const declared = [open.url.slice(7), ...[...targets.values()].map((t) => `127.0.0.1:${t.port}`)];
  stateDir = newStateDir();
  await k.storeHttpSecret(stateDir, ...declared);
  await k.unlock(stateDir);
  const gw = await k.gateway(k.project(nodeServer, declared), stateDir);
  port = await proxyPort(gw);
  // a call that stays in flight until the test says, so the window is open for this process
  const done = join(tempDir("portcullis-fin-"), "done");
  const call = approvedCall(gw, stateDir, "fetch_url", { url: `${open.url}/open`, after: done }, new Set());
  await waitFor(() => released(open).length > 0, 20_000, "the call's first request released");
  endCall = async () => {
    writeFileSync(done, "");
    await call;
  };
}, 60_000);

afterAll(async () => {
  await endCall?.();
  await k.cleanupAll();
});

/** The vault holder's process, from the file `unlock` wrote for it. */
function holderPid(): number {
  const file = readdirSync(stateDir).find((f) => /^vault-holder-\d+\.pid$/.test(f));
  if (!file) throw new Error("no vault holder");
  return Number(/\d+/.exec(file)?.[0]);
}

/**
 * Sends `request` through the proxy (in a tunnel or in absolute form) and its FIN at once, while
 * the holder is stopped; lets the holder go on once the proxy answered (or after a while, when it
 * does not answer before the request is prepared). Resolves with what the client read by the
 * proxy's end of the connection.
 */
async function finWhilePrepared(
  how: "tunnel" | "absolute",
  host: string,
  request: (target: string) => string,
) {
  const s = connect(port, "127.0.0.1");
  s.on("error", () => {});
  let read = "";
  s.on("data", (d: Buffer) => {
    read += d.toString("latin1");
  });
  const ended = new Promise<void>((resolve) => {
    s.once("end", resolve);
    s.once("close", resolve);
  });
  await new Promise((r) => s.once("connect", r));
  if (how === "tunnel") {
    s.write(`CONNECT ${host} HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
    await waitFor(() => read.includes("\r\n\r\n") || null, BOUND, "the CONNECT's 200");
    expect(read).toBe("HTTP/1.1 200 Connection Established\r\n\r\n");
    read = "";
  }
  const pid = holderPid();
  process.kill(pid, "SIGSTOP");
  try {
    s.end(request(how === "tunnel" ? "/" : `http://${host}/`));
    // (the holder's client gives up on a silent holder after 2 s: let it go well before)
    await waitFor(
      () => read.includes("\r\n\r\n") || null,
      1000,
      "an answer while the request is prepared",
    ).catch(() => {});
  } finally {
    process.kill(pid, "SIGCONT");
  }
  await Promise.race([
    ended,
    new Promise((_, no) => setTimeout(() => no(new Error("the proxy never ended the connection")), BOUND)),
  ]);
  return read;
}

const post = (host: string, body: string) => (target: string) =>
  `POST ${target} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${PLACEHOLDER}\r\nContent-Length: 10\r\n\r\n${body}`;

/** The egress record of the request to `port`, once the gateway wrote it. */
async function recordOf(targetPort: number) {
  return waitFor(
    async () =>
      (await auditEvents(stateDir)).find((e) => e.type === "egress" && e.port === targetPort) ?? null,
    BOUND,
    `the egress record of 127.0.0.1:${targetPort}`,
  );
}

describe("a client's FIN while its request is prepared", () => {
  for (const how of ["tunnel", "absolute"] as const) {
    it(`${how}: a request short of its body is never sent: the upstream gets no byte, the client a 400; failed`, async () => {
      const t = targets.get(`${how}-cut`)!;
      const host = `127.0.0.1:${t.port}`;
      const read = await finWhilePrepared(how, host, post(host, "01234"));
      expect(read).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
      expect(read).toContain(CLOSED_MID_REQUEST);
      const r = await recordOf(t.port);
      expect(r).toMatchObject({ method: "POST", outcome: "failed" });
      expect(t.text()).toBe("");
    });

    it(`${how}: a request whole with what came before the FIN goes out with the value and is answered`, async () => {
      const t = targets.get(`${how}-whole`)!;
      const host = `127.0.0.1:${t.port}`;
      const read = await finWhilePrepared(how, host, post(host, "0123456789"));
      // (in absolute form an answer read for the value comes in the proxy's own chunks)
      expect(read).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\n(ok|2\r\nok\r\n0\r\n\r\n)$/);
      expect(t.text()).toContain(`Authorization: Bearer ${SECRET}\r\n`);
      expect(t.text()).toMatch(/\r\n\r\n0123456789$/);
      expect(await recordOf(t.port)).toMatchObject({ method: "POST", outcome: "forwarded", status: 200 });
    });
  }
});
