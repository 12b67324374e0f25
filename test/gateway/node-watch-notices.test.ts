// `node --watch` prints its own notices ("Restarting 'x'", "Completed running 'x'", "Failed
// running 'x'") on the stdout its worker shares with the gateway. They are not the server's
// messages, and not its fault: under node's watch mode the gateway says what they are instead of
// warning of an invalid message. They are dropped all the same, never forwarded; any other line
// that is not JSON-RPC, and the same words from a server not under node's watch mode, keep the
// warning (a server's own words decide nothing but a log line's wording).
import { afterEach, expect, it } from "vitest";
import { isNodeWatchNotice } from "../../src/identity/selfWatch.js";
import { waitFor } from "../helpers/files.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { makeProject } from "../helpers/project.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const INVALID = /warning: dropped an invalid message from the server/;

function start(command: string[], cwd?: string, env: Record<string, string> = {}): RawGateway {
  const gw = rawGateway({
    args: ["--label", "watched", "--approval", "none", "--", ...command],
    ...(cwd ? { cwd } : {}),
    env,
  });
  cleanup.push(() => gw.close());
  return gw;
}

it("node --watch swapping its worker: its notice is logged as node's, not as an invalid message, and not forwarded", async () => {
  const project = makeProject("B");
  cleanup.push(() => project.cleanup());
  const gw = start([NODE, "--watch", "dist/server.js"], project.dir, project.env);
  await gw.initialize();
  const read = async () =>
    JSON.parse(
      (await gw.request("tools/call", { name: "read_status", arguments: {} })).result.content[0].text,
    );
  expect((await read()).revision).toBe("B");
  project.rebuild("C");
  await waitFor(() => /Restarting 'dist\/server\.js'/.test(gw.stderr()), 15_000, "node's Restarting notice");
  await waitFor(async () => (await read()).revision === "C", 15_000, "the new worker");
  const err = gw.stderr();
  expect(err).toMatch(
    /portcullis\[watched\]: node --watch \(node's watch mode\) said: "Restarting 'dist\/server\.js'"/,
  );
  expect(err).not.toMatch(INVALID);
  expect(gw.lines().some((l) => l.includes("Restarting"))).toBe(false);
});

it("under node --watch, node's notices are told apart from a line that is not JSON-RPC", async () => {
  const gw = start([NODE, "--watch", FIXTURES.rawlines]);
  await gw.initialize();
  const lines = ["Completed running 'server.js'", "Failed running 'server.js'", "Restarting 'x' now"];
  expect((await gw.request("raw/send", { lines })).result).toEqual({});
  await waitFor(() => /Restarting 'x' now/.test(gw.stderr()), 10_000, "the last line logged");
  const err = gw.stderr();
  expect(err).toMatch(/node --watch \(node's watch mode\) said: "Completed running 'server\.js'"/);
  expect(err).toMatch(/node --watch \(node's watch mode\) said: "Failed running 'server\.js'"/);
  // not one of node's notices: still an invalid message of the server's
  expect(err).toMatch(
    /warning: dropped an invalid message from the server: not valid JSON: "Restarting 'x' now"/,
  );
  expect(err.match(new RegExp(INVALID, "g"))).toHaveLength(1);
  expect(gw.lines().some((l) => l.includes("running 'server.js'"))).toBe(false);
});

it("without node's watch mode, a server printing node's words gets the warning", async () => {
  const gw = start([NODE, FIXTURES.rawlines]);
  await gw.initialize();
  expect((await gw.request("raw/send", { lines: ["Restarting 'server.js'"] })).result).toEqual({});
  await waitFor(() => INVALID.test(gw.stderr()), 10_000, "the warning");
  expect(gw.stderr()).toMatch(
    /warning: dropped an invalid message from the server: not valid JSON: "Restarting 'server\.js'"/,
  );
  expect(gw.stderr()).not.toMatch(/watch mode/);
});

it("node's notices are recognised with the colours node adds when they are forced (FORCE_COLOR)", () => {
  expect(isNodeWatchNotice("\x1bc\x1b[32mRestarting 'dist/server.js'\x1b[39m")).toBe(true);
  expect(isNodeWatchNotice("\x1b[31mFailed running 'it\\'s.js'\x1b[39m")).toBe(true);
  expect(isNodeWatchNotice(`Completed running "it's.js"`)).toBe(true);
  expect(isNodeWatchNotice("Waiting for graceful termination...")).toBe(true);
  expect(isNodeWatchNotice("Restarting 'x' now")).toBe(false);
  expect(isNodeWatchNotice("Restarting x")).toBe(false);
});
