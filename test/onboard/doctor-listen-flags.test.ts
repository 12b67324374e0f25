// doctor and a host entry whose `run` gives an HTTP front's option (--listen-token-file, --no-auth,
// --listen-max-sessions, --listen-idle-timeout) with no address to listen on: no --listen, and,
// for a portcullis.json label, no "listen" in its configuration. `portcullis run` refuses that at
// every start (exit 2); doctor said nothing of it. Now each is a problem naming the host file and
// the entry, carrying run's own sentence, and each entry started as its host starts it is refused
// with that sentence. An entry whose label's configuration gives the address is not one.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CLI, fixtureCommand, NODE } from "../helpers/paths.js";
import { type Finding, started, withState, writeConfig, writeServers } from "./doctorKit.js";
import { fakeUsersOfEachTest } from "./hosts.js";

const user = fakeUsersOfEachTest();

describe("doctor and the HTTP front's options without --listen", () => {
  it("each entry run refuses is a problem with run's sentence; one whose label gives listen is not", async () => {
    const u = user();
    withState(u);
    const token = join(u.root, "good.token");
    writeFileSync(token, "tok-good-0a1b2c3d4e5f6a7b8c9d\n", { mode: 0o600 });
    const [command, ...args] = fixtureCommand("echo");
    writeConfig(u.project, {
      plain: { command, args },
      served: { command, args, listen: "127.0.0.1:0" },
    });
    const run = (...more: string[]) => ({
      command: NODE,
      args: [CLI, "run", "--state-dir", u.stateDir, ...more],
    });
    const refused = {
      tokenFile: run("--listen-token-file", token, "--", command!, ...args),
      noAuth: run("--no-auth", "--", command!, ...args),
      maxSessions: run("--listen-max-sessions", "4", "--", command!, ...args),
      idleTimeout: run("--label", "echo", "--listen-idle-timeout", "5000", "--", command!, ...args),
      labelWithout: run("--listen-max-sessions", "4", "plain"),
    };
    const fine = {
      withListen: run("--listen", "127.0.0.1:0", "--listen-max-sessions", "4", "--", command!, ...args),
      labelListens: run("--listen-max-sessions", "4", "served"),
    };
    const mcp = writeServers(u.files["claude-code"], { ...refused, ...fine });

    const json = await u.cli(["doctor", "--json"]);
    const text = await u.cli(["doctor"]);
    expect(json.code).toBe(1);
    const findings = (JSON.parse(json.stdout).findings as Finding[]).filter((f) =>
      f.what.includes("--listen"),
    );
    const sentences = {
      tokenFile: "--listen-token-file needs --listen HOST:PORT",
      noAuth: "--no-auth needs --listen HOST:PORT",
      maxSessions: "--listen-max-sessions needs --listen HOST:PORT",
      idleTimeout: "--listen-idle-timeout needs --listen HOST:PORT",
      labelWithout: "--listen-max-sessions needs --listen HOST:PORT",
    };
    const problem = (key: string, flag: string, orConfig = "") => ({
      ok: false,
      what: `${mcp}: server "${key}": ${sentences[key as keyof typeof sentences]}, so 'portcullis run' refuses to start (exit 2 at every start, and the host shows a server that does not connect)`,
      next: `add "--listen", "127.0.0.1:PORT" to the "args" of "${key}" in ${mcp}${orConfig}, or remove "--${flag}" from them`,
    });
    // one each, and nothing of the token file: run refuses before it reads it
    expect(findings).toEqual([
      problem("tokenFile", "listen-token-file"),
      problem("noAuth", "no-auth"),
      problem("maxSessions", "listen-max-sessions"),
      problem("idleTimeout", "listen-idle-timeout"),
      problem(
        "labelWithout",
        "listen-max-sessions",
        ` (or "listen": "127.0.0.1:PORT" to "plain" in its portcullis.json)`,
      ),
    ]);
    for (const f of findings) expect(text.stdout).toContain(f.what);

    // what doctor says is what the gateway the host starts says
    for (const [key, entry] of Object.entries(refused)) {
      const gateway = started(entry, u.project);
      expect(gateway.status, key).toBe(2);
      expect(gateway.stderr, key).toBe(`portcullis run: ${sentences[key as keyof typeof sentences]}.\n`);
    }
  });
});
