// The gateway adds `listChanged: true` to the `tools` capability of the server's initialize
// answer (it tells the client of every change itself). A server whose `tools` capability is not
// an object (`"yes"`, `[1, 2]`, `7`) had it spread into one: the client read
// `{"0":"y","1":"e","2":"s","listChanged":true}`, words neither the server nor the gateway meant.
// Such a capability now reaches the client as the server wrote it (what a client makes of it is
// the client's: the gateway does not invent a capability), and an object one still gets
// `listChanged`. Real gateway, the rawlines fixture answering initialize with the line it is given.
import { afterEach, expect, it } from "vitest";
import { fixtureCommand } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";

const peers: RawGateway[] = [];
afterEach(async () => {
  for (const p of peers.splice(0)) await p.close();
});

async function toolsCapabilityShown(tools: string): Promise<unknown> {
  const answer = `{"jsonrpc":"2.0","id":ID,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":${tools},"logging":{}},"serverInfo":{"name":"x","version":"1"}}}`;
  const gw = rawGateway({
    args: ["--label", "shapes", "--approval", "none", "--", ...fixtureCommand("rawlines")],
    env: { FIXTURE_RAW_ANSWERS: JSON.stringify({ initialize: answer }) },
  });
  peers.push(gw);
  const init = await gw.initialize();
  expect((await gw.request("ping")).result).toEqual({});
  return (init.result as { capabilities: { tools?: unknown } }).capabilities.tools;
}

it.each([
  ["a string", '"yes"', "yes"],
  ["an array", "[1,2]", [1, 2]],
  ["a number", "7", 7],
  ["null", "null", null],
])("a tools capability that is %s reaches the client as the server wrote it", async (_what, tools, shown) => {
  expect(await toolsCapabilityShown(tools)).toEqual(shown);
});

it("an object tools capability is told listChanged, its other members kept", async () => {
  expect(await toolsCapabilityShown('{"x":1}')).toEqual({ x: 1, listChanged: true });
});
