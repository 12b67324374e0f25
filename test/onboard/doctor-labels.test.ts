// portcullis doctor on host entries that run a portcullis.json label (`run … LABEL`, the way to
// credentials, docs/onboarding.md): a label the file does not define, a file that cannot be used,
// no file where the host starts the server; and a credential moved to the vault but left in clear
// in the entry's env, named by file, entry and variable, its value never printed. The real CLI in
// a fake home, the real gateway started as the host would start each entry.
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { CLI, fixtureCommand, NODE } from "../helpers/paths.js";
import { passphraseEnv } from "../helpers/state.js";
import {
  doctorOf as doctorOfFile,
  expectNoValue,
  started,
  withState,
  writeConfig,
  writeServers,
} from "./doctorKit.js";
import { type FakeUser, fakeUsersOfEachTest } from "./hosts.js";

const user = fakeUsersOfEachTest();

/** An entry as the docs write it: node and the CLI by absolute path, `run --state-dir DIR [more] LABEL`. */
function labelEntry(u: FakeUser, label: string, more: string[] = [], extra: Record<string, unknown> = {}) {
  return { command: NODE, args: [CLI, "run", "--state-dir", u.stateDir, ...more, label], ...extra };
}

function writeMcp(u: FakeUser, servers: Record<string, unknown>): string {
  return writeServers(u.files["claude-code"], servers);
}

/** doctor --json's findings about the project's .mcp.json, and the text doctor's output. */
const doctorOf = (u: FakeUser) => doctorOfFile(u, u.files["claude-code"]);

describe("doctor and host entries that run a portcullis.json label", () => {
  it("a label missing from portcullis.json, one that cannot be read, none found: each a problem naming the host file, the entry, the label and what to do", async () => {
    const u = user();
    withState(u);
    const [command, ...args] = fixtureCommand("echo");
    const config = writeConfig(u.project, { echo: { command, args } });
    const broken = join(u.root, "elsewhere");
    mkdirSync(broken);
    writeFileSync(join(broken, "portcullis.json"), '{"servers": {"echo": ');
    const nowhere = join(u.root, "nowhere");
    mkdirSync(nowhere);
    const entries = {
      echo: labelEntry(u, "echo"),
      typo: labelEntry(u, "ecoh"),
      broken: labelEntry(u, "echo", ["--config", join(broken, "portcullis.json")]),
      lost: labelEntry(u, "echo", [], { cwd: nowhere }),
      wrapped: {
        command: NODE,
        args: [CLI, "run", "--state-dir", u.stateDir, "--label", "x", "--", command, ...args],
      },
    };
    const mcp = writeMcp(u, entries);
    const { json, text, findings } = await doctorOf(u);
    expect(json.code).toBe(1);
    expect(findings).toEqual([
      {
        ok: false,
        what: `${mcp}: server "typo" runs the portcullis.json label "ecoh", which ${config} does not define (it has "echo")`,
        next: `add "ecoh" under "servers" in ${config}, or change the label the entry runs in ${mcp} to one it defines`,
      },
      {
        ok: false,
        what: expect.stringMatching(
          new RegExp(
            `^${mcp}: server "broken" runs the portcullis.json label "echo" of ${broken}/portcullis.json, which cannot be used: ${broken}/portcullis.json: not valid JSON`,
          ),
        ),
        next: `fix ${broken}/portcullis.json (the gateway the host starts for "broken" refuses it too), then run doctor again`,
      },
      {
        ok: false,
        what: `${mcp}: server "lost" runs the portcullis.json label "echo", but no portcullis.json is found in ${nowhere} or above (the entry's "cwd", where the host starts it)`,
        next: `describe "echo" under "servers" in a portcullis.json in ${nowhere} or above, or give the entry's run the file's absolute path with --config FILE before the label`,
      },
    ]);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain(`PROBLEM  ${mcp}: server "typo" runs the portcullis.json label "ecoh"`);

    // what doctor says is what the host meets: each of the three gateways refuses to start (exit
    // 2, naming the same cause)
    const env = { ...process.env, PORTCULLIS_HOME: "" };
    const typo = spawnSync(entries.typo.command, entries.typo.args, {
      cwd: u.project,
      input: "",
      encoding: "utf8",
      env,
    });
    expect(typo.status).toBe(2);
    expect(typo.stderr).toMatch(/no server by that label \(the label given is not repeated/);
    expect(typo.stderr).not.toContain("ecoh");
    const lost = started(entries.lost, nowhere);
    expect(lost.status).toBe(2);
    expect(lost.stderr).toMatch(/no portcullis\.json found/);
    expect(started(entries.broken, u.project).status).toBe(2);

    // put right, doctor has nothing to say about them
    writeConfig(u.project, { echo: { command, args }, ecoh: { command, args } });
    writeFileSync(join(broken, "portcullis.json"), JSON.stringify({ servers: { echo: { command, args } } }));
    writeConfig(nowhere, { echo: { command, args } });
    const again = await doctorOf(u);
    expect(again.findings).toEqual([]);
  }, 120_000);

  it("a credential moved to the vault but left in clear in the entry's env: a problem naming file, entry and variable; the value never printed", async () => {
    const u = user();
    withState(u);
    const secret = "sk-live-Zq8vT3nW0pXy7RkL2mHc";
    const set = await runCli(["vault", "set", "weather-key", "--from-stdin", "--deliver", "env"], {
      stateDir: u.stateDir,
      env: passphraseEnv(),
      input: secret,
    });
    expect(set.code, set.stderr).toBe(0);
    const [command, ...args] = fixtureCommand("echo");
    const config = writeConfig(u.project, {
      weather: { command, args, credentials: { WEATHER_API_KEY: "weather-key", OTHER_KEY: "not-stored" } },
    });
    const env = { WEATHER_API_KEY: secret, OTHER_KEY: `${secret}-2`, LOG_LEVEL: "debug" };
    const mcp = writeMcp(u, { weather: labelEntry(u, "weather", [], { env }) });
    const { json, text, findings } = await doctorOf(u);
    expect(json.code).toBe(1);
    // OTHER_KEY's scope is not in the vault: a secret the gateway refuses to start without, and a
    // value in clear in the host file all the same (the vault set to run named); LOG_LEVEL is no
    // credential
    expect(findings).toEqual([
      {
        ok: false,
        what: `${mcp}: server "weather" runs the portcullis.json label "weather", which the gateway refuses to start: ${config}: servers.weather.credentials.OTHER_KEY names the secret "not-stored", which is not in the vault of ${u.stateDir}; store it first with 'portcullis vault set not-stored --deliver env --state-dir ${u.stateDir}'`,
        next: `do as the sentence says ('portcullis vault list --state-dir ${u.stateDir}' shows the vault's secrets and how each may be handed out), then run doctor again`,
      },
      {
        ok: false,
        what: `${mcp}: server "weather" still sets "WEATHER_API_KEY" in its "env", in clear, a credential the vault holds as "weather-key" (${config}, label "weather", takes it from the vault)`,
        next: `delete "WEATHER_API_KEY" from the entry's "env" in ${mcp} (the server gets the vault's value); the value has been in a file, so rotate it (${mcp}.portcullis-backup and the wrap record may hold it too)`,
      },
      {
        ok: false,
        what: `${mcp}: server "weather" sets "OTHER_KEY" in its "env", in clear: every process of this user can read it there, the agent included; the label "weather" (${config}) takes it from the vault as "not-stored", which the vault does not hold yet`,
        next: `store the value in the vault under that name ('portcullis vault set not-stored --deliver env --state-dir ${u.stateDir}'), then delete "OTHER_KEY" from the entry's "env" in ${mcp}; the value has been in a file, so rotate it`,
      },
    ]);
    // never the value, whole or in part, nor a digest of it, in either form of the report
    expectNoValue([json.stdout, json.stderr, text.stdout, text.stderr], [secret]);
    expect(text.stdout).toContain(`PROBLEM  ${mcp}: server "weather" still sets "WEATHER_API_KEY"`);

    // deleted from the env as the finding says, the other credential stored: nothing left to say
    writeMcp(u, { weather: labelEntry(u, "weather", [], { env: { LOG_LEVEL: "debug" } }) });
    const other = await runCli(["vault", "set", "not-stored", "--from-stdin", "--deliver", "env"], {
      stateDir: u.stateDir,
      env: passphraseEnv(),
      input: "another-value-0123456789",
    });
    expect(other.code, other.stderr).toBe(0);
    expect((await doctorOf(u)).findings).toEqual([]);
  }, 120_000);
});
