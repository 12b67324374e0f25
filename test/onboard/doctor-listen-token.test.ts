// doctor and the bearer token files `run --listen` reads: a --listen-token-file in a host entry's
// args, a listenTokenFile in portcullis.json. `run --listen` refuses one that other users may read
// or change; doctor reports it first, with the chmod to run, and never prints the token.
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CLI, fixtureCommand, NODE } from "../helpers/paths.js";
import { expectNoValue, type Finding, started, withState, writeConfig, writeServers } from "./doctorKit.js";
import { fakeUsersOfEachTest } from "./hosts.js";

const user = fakeUsersOfEachTest();

const TOKENS = {
  open: "tok-open-4f1c9a7e2b8d6c3a5e0f1b2c",
  closed: "tok-closed-9a8b7c6d5e4f3a2b1c0d",
  relative: "tok-relative-1a2b3c4d5e6f7a8b9c0d",
  config: "tok-config-0f9e8d7c6b5a4f3e2d1c",
  configClosed: "tok-config-closed-5a5b5c5d5e5f",
};

function tokenFile(path: string, token: string, mode: number): string {
  writeFileSync(path, `${token}\n`);
  chmodSync(path, mode);
  return path;
}

describe("doctor and --listen token files", () => {
  it("a token file of mode 644 (entry args, relative or absolute, or portcullis.json) is a problem with its chmod 600; one of 600 is not", async () => {
    const u = user();
    withState(u);
    const open = tokenFile(join(u.root, "open.token"), TOKENS.open, 0o644);
    const closed = tokenFile(join(u.root, "closed.token"), TOKENS.closed, 0o600);
    const relative = tokenFile(join(u.project, "relative.token"), TOKENS.relative, 0o640);
    const config = tokenFile(join(u.root, "config.token"), TOKENS.config, 0o644);
    const configClosed = tokenFile(join(u.root, "config-closed.token"), TOKENS.configClosed, 0o600);
    const [command, ...args] = fixtureCommand("echo");
    const configFile = writeConfig(u.project, {
      served: { command, args, listen: "127.0.0.1:0", listenTokenFile: config },
      quiet: { command, args, listen: "127.0.0.1:0", listenTokenFile: configClosed },
    });
    const run = (...more: string[]) => ({
      command: NODE,
      args: [CLI, "run", "--state-dir", u.stateDir, ...more],
    });
    const listen = ["--listen", "127.0.0.1:0", "--label", "echo"];
    const entries = {
      open: run(...listen, "--listen-token-file", open, "--", command, ...args),
      closed: run(...listen, "--listen-token-file", closed, "--", command, ...args),
      // relative: read where the host starts the entry (this project)
      relative: run(...listen, "--listen-token-file", "relative.token", "--", command, ...args),
      // a label of portcullis.json: its listenTokenFile
      served: run("served"),
      quiet: run("quiet"),
    };
    const mcp = writeServers(u.files["claude-code"], entries);

    const json = await u.cli(["doctor", "--json"]);
    const text = await u.cli(["doctor"]);
    expect(json.code).toBe(1);
    const findings = (JSON.parse(json.stdout).findings as Finding[]).filter((f) =>
      f.what.includes("listen token file"),
    );
    const problem = (where: string, file: string, mode: string): Finding => ({
      ok: false,
      what: `${where}: the listen token file ${file} may be read or changed by other users (mode ${mode}), so 'portcullis run --listen' refuses to start with it (the token is what keeps them out of the server)`,
      next: `chmod 600 ${file}`,
    });
    expect(findings).toEqual([
      problem(`${mcp}: server "open" (--listen-token-file)`, open, "644"),
      problem(`${mcp}: server "relative" (--listen-token-file)`, relative, "640"),
      // named by the entry that runs the label and by the file that gives it: one problem
      problem(`${mcp}: server "served"; ${configFile}: listenTokenFile of "served"`, config, "644"),
    ]);
    for (const f of findings) expect(text.stdout).toContain(f.next);
    expect(text.stdout).not.toContain(closed);
    expect(text.stdout).not.toContain(configClosed);
    expectNoValue([json.stdout, json.stderr, text.stdout, text.stderr], Object.values(TOKENS));

    // what doctor says is what the gateway the host starts finds: it refuses the 644 file (exit 2)
    const gateway = started(entries.open, u.project);
    expect(gateway.status).toBe(2);
    expect(gateway.stderr).toContain(`chmod 600 ${open}`);

    // the commands given fix it: no such problem left
    for (const f of [open, relative, config]) chmodSync(f, 0o600);
    const after = await u.cli(["doctor", "--json"]);
    expect(
      (JSON.parse(after.stdout).findings as Finding[]).filter((f) => f.what.includes("listen token file")),
    ).toEqual([]);
  });
});
