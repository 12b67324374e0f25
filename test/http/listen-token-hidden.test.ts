// An HTTP client of `run --listen` given the front's bearer token as a plain argument (`node
// agent.mjs URL TOKEN`): its process chain is recorded with its command line, for the review's
// "who asks". The gateway knows that value (it serves with it), so the recorded line holds a mark
// in its place: never the token, in the store, the reviews or `approvals --verbose`. A real
// client process, a real gateway.
import { spawn } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { openExistingStore } from "../../src/store/db.js";
import { exitWithOutput } from "../helpers/exitWithOutput.js";
import { fixtureCommand, NODE } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";
import { startListener } from "./listen.js";

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

// initialize, initialized, then one call: the run (and its chain) begins with the session
const CLIENT = `
const [url, token] = process.argv.slice(1);
const headers = { authorization: "Bearer " + token, accept: "application/json, text/event-stream", "content-type": "application/json" };
const post = async (body, session) => {
  const r = await fetch(url, { method: "POST", headers: session ? { ...headers, "mcp-session-id": session } : headers, body: JSON.stringify(body) });
  return { session: r.headers.get("mcp-session-id"), text: await r.text() };
};
const init = await post({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "agent", version: "1" } } });
await post({ jsonrpc: "2.0", method: "notifications/initialized" }, init.session);
const call = await post({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "echo", arguments: { message: "hi" } } }, init.session);
process.stdout.write(call.text);
`;

describe("the listen token on a client's command line", () => {
  it("is not recorded in the client's process chain: a mark stands in its place", async () => {
    const stateDir = newStateDir();
    const l = await startListener(fixtureCommand("echo"), { stateDir, args: ["--approval", "none"] });
    cleanup.push(() => l.close());
    expect(l.token).toBeTruthy();
    const out = await new Promise<string>((resolve, reject) => {
      const child = spawn(NODE, ["--input-type=module", "-e", CLIENT, l.url, l.token!], {
        stdio: ["ignore", "pipe", "inherit"],
      });
      let text = "";
      child.stdout.setEncoding("utf8").on("data", (d: string) => {
        text += d;
      });
      child.on("error", reject);
      // its stdout read to the end, not only its exit: the answer is the last thing it writes
      void exitWithOutput(child, [child.stdout]).then(() => resolve(text));
    });
    expect(out).toContain("Echo: hi");
    const db = openExistingStore(stateDir);
    let chains: string[];
    try {
      chains = db.prepare("SELECT chain_json FROM runs").pluck().all() as string[];
    } finally {
      db.close();
    }
    expect(chains).toHaveLength(1);
    expect(chains[0]).not.toContain(l.token!);
    // the client's own entry: its command line, with the mark where the token was
    expect(chains[0]).toContain("(the-listen-token)");
    expect(chains[0]).toContain(l.url);
  });
});
