// A declared host that echoes what it is sent, behind an in-process egress proxy and vault holder:
// the setup of the tests that send a placeholder through the proxy and read every byte of the
// answer for the released value (hostile-egress-echo-escaped, hostile-egress-echo-references).
// The upstream is a real HTTP server; `answer` writes each reply from the token it received.
import { once } from "node:events";
import { createServer, type ServerResponse } from "node:http";
import { createCa } from "../../src/vault/egress/certs.js";
import { type CallInFlight, type EgressProxy, startEgressProxy } from "../../src/vault/egress/proxy.js";
import { holderSocketPath, runHolder } from "../../src/vault/holder.js";
import { removeDir } from "../helpers/files.js";
import { newStateDir } from "../helpers/state.js";
import { exchange } from "./egress-kit.js";

export const PLACEHOLDER = "portcullis-placeholder:api";
const quiet = { info() {}, warn() {}, debug() {}, status() {} };

export interface EchoSetup {
  host: string;
  proxy: EgressProxy;
  /** the Authorization token the upstream received, one per request */
  got: string[];
  close(): Promise<void>;
}

/** The value `secret` released (scope `api`) to an upstream that answers with `answer`. */
export async function echoUpstream(
  secret: string,
  answer: (token: string, res: ServerResponse) => void,
): Promise<EchoSetup> {
  const stateDir = newStateDir();
  const got: string[] = [];
  const upstream = createServer((req, res) => {
    req.resume();
    const token = (req.headers.authorization ?? "").replace(/^Bearer /, "");
    got.push(token);
    answer(token, res);
  });
  upstream.listen(0, "127.0.0.1");
  await once(upstream, "listening");
  const host = `127.0.0.1:${(upstream.address() as { port: number }).port}`;
  const holder = await runHolder({
    socketPath: holderSocketPath(stateDir),
    until: new Date(Date.now() + 3600_000),
    secrets: new Map([["api", { value: secret, deliver: "http", hosts: [host] }]]),
    ca: await createCa("escaped local CA"),
  });
  const window: { epoch: string; inFlight: CallInFlight[] } = {
    epoch: "E1",
    inFlight: [{ callId: "1", epoch: "E1", scopes: ["api"], key: "k1" }],
  };
  const proxy = await startEgressProxy({
    stateDir,
    credentials: [{ env: "API_KEY", secret: "api", deliver: "http", hosts: [host] }],
    mode: "record",
    calls: () => window,
    timeoutMs: 5000,
    onRecord: () => {},
    log: quiet,
  });
  return {
    host,
    proxy,
    got,
    async close() {
      await proxy.close();
      holder.stop("locked");
      upstream.closeAllConnections();
      upstream.close();
      removeDir(stateDir);
    },
  };
}

/**
 * `GET /echo` with the placeholder as a bearer token, through a tunnel or in absolute form: the
 * answer as the proxy gave it (a tunnel's own `200` head taken off).
 */
export async function askThrough(how: "tunnel" | "absolute", s: EchoSetup): Promise<string> {
  const { host } = s;
  const request = `GET ${how === "absolute" ? `http://${host}` : ""}/echo HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${PLACEHOLDER}\r\nConnection: close\r\n\r\n`;
  if (how === "absolute") return exchange(s.proxy.port, request);
  const answer = await exchange(s.proxy.port, `CONNECT ${host} HTTP/1.1\r\nHost: ${host}\r\n\r\n`, request);
  return answer.slice(answer.indexOf("\r\n\r\n") + 4);
}

/** The body of an answer read whole (its chunk framing taken off). */
export function bodyOf(answer: string): string {
  const end = answer.indexOf("\r\n\r\n") + 4;
  if (!/\r\ntransfer-encoding: chunked\r\n/i.test(answer.slice(0, end))) return answer.slice(end);
  let out = "";
  for (let at = end; ; ) {
    const nl = answer.indexOf("\r\n", at);
    const size = Number.parseInt(answer.slice(at, nl), 16);
    if (!(size > 0)) return out;
    out += answer.slice(nl + 2, nl + 2 + size);
    at = nl + 2 + size + 2;
  }
}
