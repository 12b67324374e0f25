// A connection to the console is a descriptor from the moment it is accepted, before its Host is
// read. Any local process can connect to 127.0.0.1: one that opens connections and sends half a
// request on each (slowloris) held one descriptor per connection with no bound, and the console
// ran out: whatever it opened next (the keyring, to check a passphrase) failed with EMFILE, so the
// human could not log in to decide the requests waiting on it. Its listeners (127.0.0.1 and ::1)
// hold at most half the process's descriptor limit together (src/transport/httpConnections.ts);
// one more is closed as it is accepted. The console runs under `prlimit --nofile=200`, so 400
// connections are past any cap it could pick; the human's browser connected before the flood.
import { Agent } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { FLOOD, floodTakenIn, holdConnections, UNDER_FILE_LIMIT } from "../helpers/connectionFlood.js";
import { removeDir, waitFor } from "../helpers/files.js";
import { newStateDir, TEST_PASSPHRASE } from "../helpers/state.js";
import { cookiePairs, raw, startConsoleProcess } from "./helpers.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("the console under a flood of connections", () => {
  it("a client holding 400 half-written requests under a 200-descriptor limit: the console lives, a connected browser logs in, and a new one is answered once the flood lets go", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const c = await startConsoleProcess(stateDir, [], undefined, {}, UNDER_FILE_LIMIT);
    cleanup.push(() => c.stop());
    let ended = false;
    void c.exited.then(() => {
      ended = true;
    });
    const { port, host } = new URL(c.url);
    // the browser's one connection, made before the flood
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    cleanup.push(() => agent.destroy());
    const form = await raw(`${c.url}/login`, { agent });
    expect(form.status).toBe(200);

    const flood = await holdConnections(Number(port), FLOOD, `GET /login HTTP/1.1\r\nHost: ${host}\r\n`);
    cleanup.push(() => {
      for (const s of flood) s.destroy();
    });
    await floodTakenIn(Number(port));
    // logging in reads the keyring: a file opened while the flood holds its connections
    const login = await raw(`${c.url}/login`, {
      agent,
      method: "POST",
      headers: {
        Origin: c.url,
        Cookie: cookiePairs(form.headers["set-cookie"]).join("; "),
        "Content-Type": "application/x-www-form-urlencoded",
      },
      body: new URLSearchParams({
        csrf: /name="csrf" value="([^"]+)"/.exec(form.body)![1]!,
        passphrase: TEST_PASSPHRASE,
      }).toString(),
    });
    expect([200, 303], `${login.status} ${login.body}\n${c.output()}`).toContain(login.status);
    const session = cookiePairs(login.headers["set-cookie"]).find((p) => p.startsWith("portcullis_session_"));
    expect(session, c.output()).toBeDefined();
    const home = await raw(`${c.url}/`, { agent, headers: { Cookie: session! } });
    expect(home.status, home.body).toBe(200);
    expect(ended, c.output()).toBe(false);

    // once the flood lets go, a new browser is answered (one that came before the console saw
    // the flood's connections close was closed as the flood's were: asked again)
    for (const s of flood) s.destroy();
    const later = await waitFor(
      () => raw(`${c.url}/login`).catch(() => null),
      10_000,
      `an answer after the flood (${c.output()})`,
    );
    expect(later.status, later.body).toBe(200);
    expect(ended, c.output()).toBe(false);
    expect(c.output()).not.toMatch(/EMFILE|uncaught/i);
    // the cap is said, once, not once per connection closed
    expect(c.output().match(/closed a connection as it was accepted/g) ?? [], c.output()).toHaveLength(1);
  });
});
