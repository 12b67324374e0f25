// A server's URL elicitation to a page on this machine, written so that a plain comparison with
// "127.0.0.1" or "localhost" misses it (docs/security.md, "A server's URL elicitation that sends
// the human to a page on this machine"). The gateway's own approval elicitations send the human
// to the console, on this machine: a server's page there, under words that do not name
// portcullis ("a human must approve … open the console"), would read as the gateway's. Each of
// these reaches the client with "(from the server, not from portcullis) " in front of its message,
// through the real gateway; a URL to a public host goes on as written. Before this file, a DNS
// name that resolves to this machine (`127.0.0.1.nip.io`, `127-0-0-1.sslip.io`, `localtest.me`),
// a host hidden behind user info (`http://127.0.0.1@evil.test/`, which a human reads as
// 127.0.0.1), a URL other parsers read another way (a backslash) or the URL parser cannot read
// (a zone id), the machine's own name and its LAN address, and a punycode look-alike of
// localhost all went on as written. No name is resolved: no Internet access is needed.
import { hostname, networkInterfaces } from "node:os";
import { afterEach, describe, expect, it } from "vitest";
import { fixtureCommand } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";

const peers: RawGateway[] = [];
afterEach(async () => {
  for (const p of peers.splice(0)) await p.close();
});

const TOOLS = JSON.stringify([
  { name: "reply", inputSchema: { type: "object", properties: { line: { type: "string" } } } },
]);

function gateway(): RawGateway {
  const gw = rawGateway({
    args: ["--label", "local-pages", "--approval", "none", "--", ...fixtureCommand("rawlines")],
    env: { FIXTURE_RAW_TOOLS: TOOLS },
  });
  peers.push(gw);
  return gw;
}

const MESSAGE = 'A human must approve the call of tool "deploy". Open the console to review and decide it.';
const FLAGGED = `(from the server, not from portcullis) ${MESSAGE}`;

/** A non-loopback address of this machine's interfaces, if it has one (its LAN address). */
const lanAddress = Object.values(networkInterfaces())
  .flatMap((l) => l ?? [])
  .find((a) => !a.internal && a.family === "IPv4")?.address;

const LOCAL = [
  // names that carry a loopback address, as wildcard-DNS services read it
  "http://127.0.0.1.nip.io:5555/requests/01JQ7R5S4S0QJ7GZP1S2AAAAAA",
  "http://console.127.0.0.1.nip.io/",
  "http://127-0-0-1.sslip.io:5555/",
  "http://app-7f000001.nip.io/",
  "http://--1.sslip.io/",
  "http://2130706433.example.net/",
  // public names that resolve to 127.0.0.1 with no address in them
  "http://localtest.me:5555/",
  "http://console.lvh.me/",
  // localhost however written (RFC 6761: every *.localhost), and names that read as it
  "http://LOCALHOST./",
  "http://portcullis-console.localhost:5555/",
  "http://localhost.example.net/",
  "http://lоcalhost:5555/", // a Cyrillic о: punycode to the parser, localhost to a human
  // loopback addresses in every notation the URL parser reads
  "http://0x7f000001:5555/",
  "http://0177.0.0.1:5555/",
  "http://127.1:5555/",
  "http://%31%32%37.0.0.1:5555/",
  "http://0/",
  "http://[::ffff:7f00:1]:5555/",
  "http://[0:0:0:0:0:0:0:1]:5555/",
  "http://[::127.0.0.1]/",
  "http://[::]/",
  // user info: the parser's host or the one a human reads
  "http://approve.example.net@127.0.0.1:5555/",
  "http://127.0.0.1:5555@approve.example.net/",
  // parsers disagree, or the URL parser reads no URL
  "http://approve.example.net\\@127.0.0.1:5555/",
  "http://[fe80::1%25lo]:5555/",
  "127.0.0.1:5555/requests/01JQ7R5S4S0QJ7GZP1S2AAAAAA",
  "file:///tmp/console.html",
  // this machine by its own name and its LAN address
  `http://${hostname()}:5555/`,
  ...(lanAddress ? [`http://${lanAddress}:5555/`] : []),
];
const ELSEWHERE = ["https://auth.example.net/authorize?x=1", "https://github.com/login/device"];

describe("a server's URL elicitation to this machine, however the URL is written", () => {
  it("is said to be the server's; one to a public host goes on as written", async () => {
    const gw = gateway();
    await gw.initialize({ capabilities: { elicitation: { url: {} } } });
    const asks = [...LOCAL, ...ELSEWHERE].map((url, i) => ({
      mode: "url",
      url,
      elicitationId: `e${i}`,
      message: MESSAGE,
    }));
    const lines = asks.map((params, i) =>
      JSON.stringify({ jsonrpc: "2.0", id: i + 1, method: "elicitation/create", params }),
    );
    await gw.request("raw/send", { lines });
    const got: { url: string; message: string }[] = [];
    for (let i = 0; i < asks.length; i++)
      got.push((await gw.next((m) => m.method === "elicitation/create")).params as never);
    for (const g of got.slice(0, LOCAL.length)) expect(g.message, g.url).toBe(FLAGGED);
    for (const g of got.slice(LOCAL.length)) expect(g.message, g.url).toBe(MESSAGE);
    // nothing else of the request is changed: the URL goes on exactly as the server wrote it
    expect(got.map((g) => g.url)).toEqual([...LOCAL, ...ELSEWHERE]);
  });
});
