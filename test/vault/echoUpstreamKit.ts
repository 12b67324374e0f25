// A declared host that echoes what it is sent, behind an in-process egress proxy and vault holder:
// the setup of the tests that send a placeholder through the proxy and read every byte of the
// answer for the released value (hostile-egress-echo-escaped, hostile-egress-echo-references).
// The upstream is a real HTTP server; `answer` writes each reply from the token it received.
// And a page of the token in many writings, one line each, given in small pieces (echoPage), with
// the test's own reading of HTML references and URL escapes (readEscapes): what the tests of names
// share (hostile-egress-echo-non-ascii-names, -pair-names, -base64-pair-names); the first two
// whole (describeFormsPage), as their setup and checks are the same but for the writings.
import { once } from "node:events";
import { createServer, type ServerResponse } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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

/** Where the request carries the placeholder: a bearer token, or the query's `token` (a header cannot carry a value outside ASCII). */
export type TokenIn = "header" | "query";

/**
 * `GET /echo` with the placeholder as a bearer token (or in the query), through a tunnel or in
 * absolute form: the answer as the proxy gave it (a tunnel's own `200` head taken off).
 */
export async function askThrough(
  how: "tunnel" | "absolute",
  s: EchoSetup,
  tokenIn: TokenIn = "header",
): Promise<string> {
  const { host } = s;
  const path = tokenIn === "query" ? `/echo?token=${PLACEHOLDER}` : "/echo";
  const auth = tokenIn === "header" ? `Authorization: Bearer ${PLACEHOLDER}\r\n` : "";
  const request = `GET ${how === "absolute" ? `http://${host}` : ""}${path} HTTP/1.1\r\nHost: ${host}\r\n${auth}Connection: close\r\n\r\n`;
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

/**
 * `secret` released to an upstream that answers with an HTML page of `lines(token)`, each as
 * `value LINE`, from the token the request carried (`tokenIn`), in pieces of `piece` bytes a
 * millisecond apart (so the proxy's stream is cut inside the writings); `got` holds that token.
 */
export async function echoPage(
  secret: string,
  lines: (token: string) => string[],
  piece: number,
  tokenIn: TokenIn = "header",
): Promise<EchoSetup> {
  const queried: string[] = [];
  const s = await echoUpstream(secret, (header, res) => {
    const token =
      tokenIn === "header"
        ? header
        : (new URL(res.req.url ?? "", "http://x").searchParams.get("token") ?? "");
    queried.push(token);
    const page = lines(token).map((l) => `value ${l}`);
    const body = Buffer.from(`<html><body><pre>\n${page.join("\n")}\n</pre></body></html>\n`, "utf8");
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    let at = 0;
    const next = () => {
      if (at >= body.length) return void res.end();
      res.write(body.subarray(at, at + piece));
      at += piece;
      setTimeout(next, 1);
    };
    next();
  });
  return { ...s, got: tokenIn === "header" ? s.got : queried };
}

/** The lines of echoPage's page in an answer, each without its `value `. */
export function pageLines(answer: string): string[] {
  return bodyOf(answer)
    .split("\n")
    .filter((l) => l.startsWith("value "))
    .map((l) => l.slice("value ".length));
}

/**
 * The test's own reading of `text`, four times over: `%25`, `%26`, `%3B` and `&amp;` as what they
 * stand for, decimal references, and the names of `byName` (with their `;`, or without it too
 * where `bare`); what the bytes spell to a reader that decodes them as often as they were written.
 */
export function readEscapes(text: string, byName: ReadonlyMap<string, string>, bare = false): string {
  const name = bare ? /&([A-Za-z0-9]+);?/g : /&([A-Za-z0-9]+);/g;
  let out = text;
  for (let i = 0; i < 4; i++)
    out = out
      .replace(/%25/g, "%")
      .replace(/%26/g, "&")
      .replace(/%3B/g, ";")
      .replace(/&amp;/g, "&")
      .replace(/&#([0-9]+);/g, (_m, d) => String.fromCodePoint(Number(d)))
      .replace(name, (m, n) => byName.get(n) ?? m);
  return out;
}

/**
 * The test of an upstream that writes the released `secret` in each of `forms`, one line each, on
 * a page given in pieces of `piece` bytes, the placeholder sent in the query: through a tunnel and
 * in absolute form, no line of the answer read back (`read`, the test's own reader) holds any of
 * `parts` (pieces of the value its writings must not give back), each holds the placeholder, and
 * nothing the proxy gave holds the value as any form writes it. Registers its own beforeAll,
 * afterAll and describe.
 */
export function describeFormsPage(
  title: string,
  secret: string,
  forms: Record<string, (t: string) => string>,
  piece: number,
  read: (line: string) => string,
  parts: readonly string[],
): void {
  let s: EchoSetup;
  beforeAll(async () => {
    s = await echoPage(
      secret,
      (token) => Object.entries(forms).map(([name, write]) => `${name} ${write(token)}`),
      piece,
      "query",
    );
  });
  afterAll(async () => {
    await s?.close();
  });
  describe(title, () => {
    for (const how of ["tunnel", "absolute"] as const)
      it(`${how}: no line of the page, read back, holds the value; each holds the placeholder`, async () => {
        const answer = Buffer.from(await askThrough(how, s, "query"), "latin1").toString("utf8");
        expect(s.got.at(-1)).toBe(secret);
        expect(answer).toMatch(/^HTTP\/1\.1 200 /);
        const lines = pageLines(answer);
        expect(lines).toHaveLength(Object.keys(forms).length);
        for (const line of lines) {
          const shown = read(line);
          for (const part of parts) expect(shown, line).not.toContain(part);
          expect(shown, line).toContain("portcullis-placeholder");
        }
        // nothing the proxy gave this process holds the value in any of the upstream's writings
        for (const write of Object.values(forms)) expect(answer).not.toContain(write(secret));
      });
  });
}
