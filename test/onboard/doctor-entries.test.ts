import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { CLI, fixtureCommand, NODE } from "../helpers/paths.js";
import { rawPeer } from "../helpers/raw.js";
import { passphraseEnv } from "../helpers/state.js";
import {
  doctorOf,
  expectNoValue,
  type Finding,
  started,
  withState,
  writeConfig,
  writeServers,
} from "./doctorKit.js";
import { fakeUsersOfEachTest } from "./hosts.js";

const user = fakeUsersOfEachTest();

describe("doctor and the entries the gateway would refuse, credentials in clear, Claude Desktop", () => {
  it("an entry whose run arguments run refuses: a problem with run's own sentence, the one the gateway the host starts exits 2 with", async () => {
    const u = user();
    withState(u);
    const [command, ...args] = fixtureCommand("echo");
    writeConfig(u.project, { echo: { command, args } });
    const run = (...more: string[]) => ({
      command: NODE,
      args: [CLI, "run", "--state-dir", u.stateDir, ...more],
    });
    const entries = {
      typo: run("--on-change", "restrat", "echo"),
      unknown: run("--bogus", "echo"),
      twice: run("--state-dir", u.stateDir, "echo"),
      both: run("--config", join(u.project, "portcullis.json"), "--", command, ...args),
      header: run("--header", "X-Key: v", "--", command, ...args),
      help: run("--help", "echo"),
      // `--state-dir "$DIR"` with DIR unset in the host's environment
      empty: { command: NODE, args: [CLI, "run", "--state-dir", "", "echo"] },
      fine: run("--on-change", "restart", "echo"),
      wrapped: run("--label", "echo-w", "--", command, ...args),
    };
    const mcp = writeServers(u.files["claude-code"], entries);
    const { json, text, findings } = await doctorOf(u, mcp);
    expect(json.code).toBe(1);
    const refused = ["typo", "unknown", "twice", "both", "header"] as const;
    expect(findings.map((f) => f.what.slice(mcp.length + 2).split(" runs ")[0])).toEqual([
      ...refused.map((k) => `server "${k}"`),
      'server "help"',
      'server "empty"',
    ]);
    for (const [i, key] of refused.entries()) {
      const entry = entries[key];
      // the gateway the host starts: exit 2 with one sentence, which doctor's finding carries
      const gateway = started(entry, u.project);
      expect(gateway.status, key).toBe(2);
      const sentence = /^portcullis run: (.*?)\.?\n?$/.exec(gateway.stderr)?.[1];
      expect(sentence, gateway.stderr).toBeTruthy();
      expect(findings[i]).toEqual({
        ok: false,
        what: `${mcp}: server "${key}" runs portcullis with arguments 'portcullis run' refuses (${sentence}): the gateway exits 2 at every start, and the host shows a server that does not connect`,
        next: `fix the "args" of "${key}" in ${mcp} as the sentence says ('portcullis run --help' lists run's options), then run doctor again`,
      });
    }
    expect(findings[0]!.what).toContain("--on-change must be one of report, restart, disconnect");
    expect(findings[1]!.what).toContain("unknown option --bogus");
    expect(findings[5]).toEqual({
      ok: false,
      what: `${mcp}: server "help" runs 'portcullis run --help', which prints run's help and exits: the host gets no server`,
      next: `remove "--help" (or "-h") from the "args" of "help" in ${mcp}`,
    });
    // run refuses it when it opens its state, in the state directory's own words
    const empty = started(entries.empty, u.project);
    expect(empty.status).toBe(2);
    expect(empty.stderr).toBe(
      "portcullis run: --state-dir is empty; give a directory, or leave the flag out for the default.\n",
    );
    expect(findings[6]).toEqual({
      ok: false,
      what: `${mcp}: server "empty" runs portcullis with arguments 'portcullis run' refuses (--state-dir is empty; give a directory, or leave the flag out for the default): the gateway exits 2 at every start, and the host shows a server that does not connect`,
      next: `fix the "args" of "empty" in ${mcp} as the sentence says ('portcullis run --help' lists run's options), then run doctor again`,
    });
    const help = started(entries.help, u.project);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^usage: portcullis run/);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain(`PROBLEM  ${mcp}: server "typo" runs portcullis with arguments`);

    // put right: nothing to say about any of them
    writeServers(mcp, { fine: entries.fine, wrapped: entries.wrapped });
    expect((await doctorOf(u, mcp)).findings).toEqual([]);
  }, 120_000);

  it("a credential the vault holds left in clear in the env of an entry that takes nothing from the vault: by its name, or by a label that takes it; the value never printed", async () => {
    const u = user();
    withState(u);
    const weather = "sk-live-Zq8vT3nW0pXy7RkL2mHc";
    const github = "ghp_R2d2C3p0Bb8Yy6Tt4Uu1Ii9Oo7Pp5Ll3Kk";
    for (const [name, value] of [
      ["weather-key", weather],
      ["github-token", github],
    ])
      expect(
        (
          await runCli(["vault", "set", name!, "--from-stdin", "--deliver", "env"], {
            stateDir: u.stateDir,
            env: passphraseEnv(),
            input: value,
          })
        ).code,
      ).toBe(0);
    const [command, ...args] = fixtureCommand("echo");
    const config = writeConfig(u.project, {
      weather: { command, args, credentials: { WEATHER_API_KEY: "weather-key" } },
    });
    const wrapped = (label: string, env: Record<string, string>) => ({
      command: NODE,
      args: [CLI, "run", "--state-dir", u.stateDir, "--label", label, "--", command, ...args],
      env,
    });
    const mcp = writeServers(u.files["claude-code"], {
      // wrapped as wrap writes it, the credential moved to the vault and the label described,
      // but the entry still runs '-- COMMAND': the server gets the host file's value
      weather: wrapped("weather", { WEATHER_API_KEY: weather, LOG_LEVEL: "debug" }),
      // another server with the variable the label "weather" takes: which one it is, doctor cannot tell
      stranger: wrapped("stranger", { WEATHER_API_KEY: weather }),
      // a secret stored under the variable's name (github-token for GITHUB_TOKEN)
      gh: wrapped("gh", { GITHUB_TOKEN: github }),
      // not behind portcullis at all
      bare: { command, args, env: { GITHUB_TOKEN: github } },
      // a label that does not take it
      labelled: {
        command: NODE,
        args: [CLI, "run", "--state-dir", u.stateDir, "weather"],
        env: { GITHUB_TOKEN: github },
      },
      // nothing the vault holds, and no credential by its name (one is the next test's)
      other: wrapped("other", { THEME: "not-in-the-vault-0123456789" }),
    });
    const { json, text, findings } = await doctorOf(u, mcp);
    expect(json.code).toBe(1);
    const rotate = `the value has been in a file, so rotate it (${mcp}.portcullis-backup and the wrap record may hold it too)`;
    expect(findings).toEqual([
      {
        ok: false,
        what: `${mcp}: server "weather" sets "WEATHER_API_KEY" in its "env", in clear, and runs '-- COMMAND', which takes nothing from the vault: the server gets the host file's value; the label "weather" of ${config} takes it from the vault, which holds it as "weather-key"`,
        next: `have the entry run that label (its "args": the CLI, "run", "--state-dir", DIR, "weather"; docs/onboarding.md, "After wrap"), then delete "WEATHER_API_KEY" from the entry's "env" in ${mcp}; ${rotate}`,
      },
      {
        ok: false,
        what: `${mcp}: server "stranger" sets "WEATHER_API_KEY" in its "env", in clear, and runs '-- COMMAND', which takes nothing from the vault: the server gets the host file's value; the label "weather" of ${config} takes it from the vault, which holds it as "weather-key"`,
        next: `if this entry is the server "weather" describes, have the entry run that label (its "args": the CLI, "run", "--state-dir", DIR, "weather"; docs/onboarding.md, "After wrap"); if it is another, describe it in portcullis.json with "credentials": {"WEATHER_API_KEY": "weather-key"} and have the entry run its own label; then delete "WEATHER_API_KEY" from the entry's "env" in ${mcp}; ${rotate}`,
      },
      {
        ok: false,
        what: `${mcp}: server "gh" sets "GITHUB_TOKEN" in its "env", in clear, and runs '-- COMMAND', which takes nothing from the vault: the server gets the host file's value; the vault holds a secret named "github-token"`,
        next: `if it is that credential: describe the server in a portcullis.json with "credentials": {"GITHUB_TOKEN": "github-token"} and have the entry run its label (docs/onboarding.md, "After wrap"), then delete "GITHUB_TOKEN" from the entry's "env" in ${mcp}; ${rotate}. If it is another one, give the vault's secret another name`,
      },
      {
        ok: false,
        what: `${mcp}: server "bare" sets "GITHUB_TOKEN" in its "env", in clear, and is not behind portcullis: the server gets the host file's value; the vault holds a secret named "github-token"`,
        next: expect.stringMatching(/^if it is that credential: describe the server in a portcullis\.json/),
      },
      {
        ok: false,
        what: `${mcp}: server "labelled" sets "GITHUB_TOKEN" in its "env", in clear, which the label it runs, "weather", does not take from the vault (its "credentials" do not name "GITHUB_TOKEN"); the vault holds a secret named "github-token"`,
        next: `if it is that credential: add "GITHUB_TOKEN": "github-token" to the "credentials" of "weather" in ${config}, then delete "GITHUB_TOKEN" from the entry's "env" in ${mcp}; ${rotate}. If it is another one, give the vault's secret another name`,
      },
    ]);
    // never a value, whole or in part, nor a digest of one, in either form of the report
    expectNoValue([json.stdout, json.stderr, text.stdout, text.stderr], [weather, github]);
    expect(text.stdout).toContain(`PROBLEM  ${mcp}: server "gh" sets "GITHUB_TOKEN" in its "env", in clear`);

    // done as the findings say: the entry runs the label, the variables are gone from the env
    writeServers(mcp, {
      weather: {
        command: NODE,
        args: [CLI, "run", "--state-dir", u.stateDir, "weather"],
        env: { LOG_LEVEL: "debug" },
      },
      other: wrapped("other", { THEME: "not-in-the-vault-0123456789" }),
    });
    expect((await doctorOf(u, mcp)).findings).toEqual([]);
  }, 120_000);

  it("a label whose credentials name a secret the vault lacks, or holds for the other delivery: a problem with the sentence the gateway refuses to start with", async () => {
    const u = user();
    withState(u);
    const stored = await runCli(["vault", "set", "api-http", "--from-stdin", "--host", "api.example.com"], {
      stateDir: u.stateDir,
      env: passphraseEnv(),
      input: "http-only-value-0123456789",
    });
    expect(stored.code, stored.stderr).toBe(0);
    const [command, ...args] = fixtureCommand("echo");
    writeConfig(u.project, {
      missing: { command, args, credentials: { API_KEY: "not-stored" } },
      // stored for HTTP delivery to one host, taken here as an environment variable
      delivery: { command, args, credentials: { API_KEY: "api-http" } },
      plain: { command, args },
    });
    const run = (label: string) => ({ command: NODE, args: [CLI, "run", "--state-dir", u.stateDir, label] });
    const entries = { missing: run("missing"), delivery: run("delivery"), plain: run("plain") };
    const mcp = writeServers(u.files["claude-code"], entries);
    const { json, findings } = await doctorOf(u, mcp);
    expect(json.code).toBe(1);
    expect(findings.map((f) => f.what.slice(mcp.length + 2).split(",")[0])).toEqual([
      'server "missing" runs the portcullis.json label "missing"',
      'server "delivery" runs the portcullis.json label "delivery"',
    ]);
    for (const [i, key] of (["missing", "delivery"] as const).entries()) {
      const gateway = started(entries[key], u.project);
      expect(gateway.status, key).toBe(2);
      const sentence = /^portcullis run: (.*?)\.?\n?$/.exec(gateway.stderr)?.[1];
      expect(sentence, gateway.stderr).toBeTruthy();
      expect(findings[i]).toEqual({
        ok: false,
        what: `${mcp}: server "${key}" runs the portcullis.json label "${key}", which the gateway refuses to start: ${sentence}`,
        next: `do as the sentence says ('portcullis vault list --state-dir ${u.stateDir}' shows the vault's secrets and how each may be handed out), then run doctor again`,
      });
    }
    expect(findings[0]!.what).toContain(
      `store it first with 'portcullis vault set not-stored --deliver env --state-dir ${u.stateDir}'`,
    );

    // an entry of another state directory is not judged by this vault
    const elsewhere = join(u.root, "other-state");
    writeServers(mcp, {
      missing: { command: NODE, args: [CLI, "run", "--state-dir", elsewhere, "missing"] },
      plain: entries.plain,
    });
    expect((await doctorOf(u, mcp)).findings).toEqual([]);
  }, 120_000);

  it("wrapped entries with no record here that name another state directory: doctor says which, and the doctor to run there", async () => {
    const u = user();
    withState(u);
    const other = join(u.root, "other state");
    const mcp = u.files["claude-code"];
    const wrap = await u.cli(["wrap", "claude-code", "--servers", "inventory-local", "--state-dir", other]);
    expect(wrap.code, wrap.stderr).toBe(0);
    const [command, ...args] = fixtureCommand("echo");
    const doc = JSON.parse(readFileSync(mcp, "utf8"));
    // wrapped by hand, with no --state-dir: nothing says where its record would be
    doc.mcpServers.manual = { command: "portcullis", args: ["run", "--", command, ...args] };
    writeFileSync(mcp, JSON.stringify(doc, null, 2));
    const report = JSON.parse((await u.cli(["doctor", "--json"])).stdout);
    expect(report.findings.filter((f: Finding) => f.what.includes("no wrap record"))).toEqual([
      {
        ok: true,
        what: `${mcp} has wrapped servers with no wrap record in ${u.stateDir}: inventory-local, manual (they name the state directory ${other})`,
        next: `their record, vault and gateways are in the state directory they name; run doctor there: portcullis doctor --state-dir '${other}'`,
      },
    ]);
    // there, the one wrap recorded is known; the one wrapped by hand is still said to be
    const there = JSON.parse((await u.cli(["doctor", "--json", "--state-dir", other])).stdout);
    expect(there.findings.filter((f: Finding) => f.what.includes("no wrap record"))).toEqual([
      {
        ok: true,
        what: `${mcp} has wrapped servers with no wrap record in ${other}: manual`,
        next: "wrapped by hand or with another state directory; 'portcullis unwrap' cannot restore them from here",
      },
    ]);
  }, 120_000);

  it("Claude Desktop: a label entry without an absolute --config is a problem offering the file's absolute path, which works from /", async () => {
    const u = user();
    withState(u);
    const [command, ...args] = fixtureCommand("echo");
    const config = writeConfig(u.project, { echo: { command, args } });
    const desktop = u.files["claude-desktop"];
    const run = (...more: string[]) => ({
      command: NODE,
      args: [CLI, "run", "--state-dir", u.stateDir, ...more],
    });
    writeServers(desktop, {
      bare: run("echo"),
      relative: run("--config", "portcullis.json", "echo"),
      absolute: run("--config", config, "echo"),
    });
    const { json, findings } = await doctorOf(u, desktop);
    expect(json.code).toBe(1);
    const unknown = `but Claude Desktop documents no directory it starts servers in ("/" on macOS) and may ignore an entry's "cwd": where the gateway looks for portcullis.json is not known`;
    expect(findings).toEqual([
      {
        ok: false,
        what: `${desktop}: server "bare" runs the portcullis.json label "echo" with no --config, ${unknown}`,
        next: `give the entry's run the file's absolute path before the label: "--config", ${JSON.stringify(config)} (in the "args" of "bare" in ${desktop})`,
      },
      {
        ok: false,
        what: `${desktop}: server "relative" runs the portcullis.json label "echo" with a relative --config ("portcullis.json"), ${unknown}`,
        next: `give the entry's run the file's absolute path before the label: "--config", ${JSON.stringify(config)} (in the "args" of "relative" in ${desktop})`,
      },
    ]);

    // started from / as Desktop starts it on macOS: without --config the gateway finds no file;
    // with the one doctor offers it serves
    const lost = started(run("echo"), "/");
    expect(lost.status).toBe(2);
    expect(lost.stderr).toMatch(/no portcullis\.json found in \/ or above/);
    const entry = run("--config", config, "echo");
    const gateway = rawPeer(entry.command, entry.args, {}, { cwd: "/" });
    try {
      const init = await gateway.initialize();
      expect(init.result).toBeDefined();
    } finally {
      await gateway.close();
    }
  }, 120_000);

  it("a credential header written out in a host file (the host's own headers, or run's --header): a problem by the header's name, the value never printed, its vault set naming the state directory; one the host fills in from its environment is not", async () => {
    const u = user();
    withState(u);
    const token = "sk-live-9f8e7d6c5b4a39281706";
    const key = "k3y-0123456789abcdef0123";
    const entries = {
      remote: {
        type: "http",
        url: "https://mcp.example.com/mcp",
        headers: { Authorization: `Bearer ${token}`, "X-Team": "blue" },
      },
      fromEnv: {
        type: "http",
        url: "https://mcp.example.com/mcp",
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a host's own expansion, as the host file holds it
        headers: { Authorization: "Bearer ${MCP_TOKEN}" },
      },
      wrapped: {
        command: NODE,
        args: [
          CLI,
          "run",
          "--label",
          "remote-w",
          "--url",
          "https://api.example.org:8443/mcp",
          "--header",
          `X-Api-Key: ${key}`,
        ],
      },
      // the vault's form: only a secret's name on the command line, nothing in clear (no
      // header finding), the secret checked against the vault as run checks it
      fromVault: {
        command: NODE,
        args: [
          CLI,
          "run",
          "--label",
          "remote-v",
          "--url",
          "https://api.example.org:8443/mcp",
          "--header-secret",
          "Authorization: Bearer {}=remote-token",
        ],
      },
    };
    const mcp = writeServers(u.files["claude-code"], entries);
    const { json, text, findings } = await doctorOf(u, mcp);
    expect(findings).toEqual([
      {
        ok: false,
        what: `${mcp}: server "remote" sends the header "Authorization" with its value written in its "headers", in clear: every process of this user can read it there`,
        next: `store the value in the vault ('portcullis vault set NAME --deliver http --host mcp.example.com --state-dir ${u.stateDir}'), have the entry run "portcullis run --url URL --header-secret 'Authorization: Bearer {}=NAME' --state-dir ${u.stateDir}", URL its "url" (or describe the server in portcullis.json with "url" and "headers": {"Authorization": {"secret":"NAME","format":"Bearer {}"}} and run that label; docs/onboarding.md, "After wrap"); then delete "Authorization" from its "headers"; the value has been in a file, so rotate it`,
      },
      {
        ok: false,
        what: `${mcp}: server "wrapped" sends the header "X-Api-Key" with its value written in a --header of the portcullis run in its "args", in clear: every process of this user can read it there`,
        next: `store the value in the vault ('portcullis vault set NAME --deliver http --host api.example.org:8443 --state-dir ${u.stateDir}'), then replace that --header in its "args" by --header-secret 'X-Api-Key: {}=NAME'; the value has been in a file, so rotate it`,
      },
      // the vault's form holds nothing in clear, but names a secret this vault lacks: the
      // gateway's own refusal at start, quoted
      {
        ok: false,
        what: `${mcp}: server "fromVault" runs portcullis with --url, and the gateway refuses to start: --header-secret "Authorization" names the secret "remote-token", which is not in the vault of ${u.stateDir}; store it first with 'portcullis vault set remote-token --host api.example.org:8443 --state-dir ${u.stateDir}'`,
        next: `do as the sentence says ('portcullis vault list --state-dir ${u.stateDir}' shows the vault's secrets and how each may be handed out), then run doctor again`,
      },
    ]);
    expect(json.code).toBe(1);
    expect(text.stdout).toContain(`PROBLEM  ${mcp}: server "remote" sends the header "Authorization"`);
    expectNoValue([json.stdout, json.stderr, text.stdout, text.stderr], [token, key]);
    for (const out of [json.stdout, json.stderr, text.stdout, text.stderr])
      for (const part of [token.slice(0, 12), key.slice(4)]) expect(out).not.toContain(part);
  }, 60_000);
  it("a credential in an entry's env that the vault does not hold: a problem by the variable's name, whatever the entry runs, the value never printed; a file, a URL, a switch or a value the host fills in is not", async () => {
    const u = user();
    withState(u);
    const token = "ghp_Zq9x8w7v6u5t4s3r2q1p0o9n8m";
    const password = "Zq9-hunter2-correct-horse";
    const [command, ...args] = fixtureCommand("echo");
    const config = writeConfig(u.project, {
      echo: { command, args },
      // takes WEATHER from the vault, which does not hold "weather-key" yet: a credential by the
      // configuration's word, whatever its name says
      weather: { command, args, credentials: { WEATHER: "weather-key" } },
      // the same, delivered over HTTP: the vault set to run names the hosts the label declares
      api: { command, args, credentials: { UPSTREAM: { secret: "api-key", hosts: ["api.example.com"] } } },
    });
    const weatherValue = "Zq9-weather-value-0a1b2c";
    const notCredentials = {
      GITHUB_TOKEN_FILE: "/home/u/.token",
      AUTH_URL: "https://login.example.com",
      USE_AUTH: "true",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a host's own expansion, as the host file holds it
      FROM_HOST: "${GITHUB_TOKEN}",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a host's own expansion, as the host file holds it
      API_TOKEN: "${env:API_TOKEN}",
      EMPTY_SECRET: "",
      LOG_LEVEL: "debug",
    };
    const entries = {
      bare: { command, args, env: { GITHUB_TOKEN: token, ...notCredentials } },
      wrapped: {
        command: NODE,
        args: [CLI, "run", "--state-dir", u.stateDir, "--label", "w", "--", command, ...args],
        env: { DB_PASSWORD: password },
      },
      labelled: {
        command: NODE,
        args: [CLI, "run", "--state-dir", u.stateDir, "echo"],
        cwd: u.project,
        env: { dbPassword: password, ...notCredentials },
      },
      viaHttp: {
        command: NODE,
        args: [CLI, "run", "--state-dir", u.stateDir, "api"],
        cwd: u.project,
        env: { UPSTREAM: weatherValue },
      },
      mapped: {
        command: NODE,
        args: [CLI, "run", "--state-dir", u.stateDir, "weather"],
        cwd: u.project,
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a host's own expansion, as the host file holds it
        env: { WEATHER: weatherValue, AUTH_HEADER: "${AUTH:-Bearer Zq9-default-in-the-file}" },
      },
    };
    const mcp = writeServers(u.files["claude-code"], entries);
    const { json, text, findings } = await doctorOf(u, mcp);
    const then = (v: string) =>
      `then delete "${v}" from the entry's "env" in ${mcp}; the value has been in a file, so rotate it`;
    const what = (k: string, v: string) =>
      `${mcp}: server "${k}" sets "${v}" in its "env", in clear: every process of this user can read it there, the agent included`;
    const store = `store the value in the vault ('portcullis vault set NAME --deliver env --state-dir ${u.stateDir}')`;
    expect(findings).toEqual([
      {
        ok: false,
        what: what("bare", "GITHUB_TOKEN"),
        next: `${store}, describe the server in portcullis.json with "credentials": {"GITHUB_TOKEN": "NAME"} and have the entry run that label (docs/onboarding.md, "After wrap"), ${then("GITHUB_TOKEN")}`,
      },
      {
        ok: false,
        what: what("wrapped", "DB_PASSWORD"),
        next: `${store}, describe the server in portcullis.json with "credentials": {"DB_PASSWORD": "NAME"} and have the entry run that label (docs/onboarding.md, "After wrap"), ${then("DB_PASSWORD")}`,
      },
      {
        ok: false,
        what: what("labelled", "dbPassword"),
        next: `${store}, add "dbPassword": "NAME" to the "credentials" of "echo" in ${join(u.project, "portcullis.json")}, ${then("dbPassword")}`,
      },
      expect.objectContaining({
        what: expect.stringContaining(
          'runs the portcullis.json label "api", which the gateway refuses to start',
        ),
      }),
      {
        ok: false,
        what: `${what("viaHttp", "UPSTREAM")}; the label "api" (${config}) takes it from the vault as "api-key", which the vault does not hold yet`,
        next: `store the value in the vault under that name ('portcullis vault set api-key --host api.example.com --state-dir ${u.stateDir}'), ${then("UPSTREAM")}`,
      },
      // the gateway would refuse to start (said apart), and the value is in the file all the same
      expect.objectContaining({
        what: expect.stringContaining(
          'runs the portcullis.json label "weather", which the gateway refuses to start',
        ),
      }),
      {
        ok: false,
        what: `${what("mapped", "WEATHER")}; the label "weather" (${config}) takes it from the vault as "weather-key", which the vault does not hold yet`,
        next: `store the value in the vault under that name ('portcullis vault set weather-key --deliver env --state-dir ${u.stateDir}'), ${then("WEATHER")}`,
      },
      // a default written beside what the host fills in is in the file
      {
        ok: false,
        what: what("mapped", "AUTH_HEADER"),
        next: `${store}, add "AUTH_HEADER": "NAME" to the "credentials" of "weather" in ${config}, ${then("AUTH_HEADER")}`,
      },
    ]);
    expect(json.code).toBe(1);
    expect(text.stdout).toContain(`PROBLEM  ${what("bare", "GITHUB_TOKEN")}`);
    expectNoValue(
      [json.stdout, json.stderr, text.stdout, text.stderr],
      [token, password, weatherValue, "Bearer Zq9-default-in-the-file"],
    );
  }, 60_000);

  it("a credential on an entry's command line: a problem by the flag, whatever the entry runs, the value never printed (wrap's dry run redacts it; doctor said nothing)", async () => {
    const u = user();
    withState(u);
    const key = "zzTopSecret999-0a1b2c3d";
    const token = "ghp_Zq9x8w7v6u5t4s3r2q1p0o9n8m";
    const [command, ...args] = fixtureCommand("echo");
    const entries = {
      flagged: { command, args: [...args, "--api-key", key, "--verbose"] },
      joined: {
        command: NODE,
        args: [
          CLI,
          "run",
          "--state-dir",
          u.stateDir,
          "--label",
          "j",
          "--",
          command,
          ...args,
          `--token=${token}`,
        ],
      },
      // where the credential is found, not the credential; a value the host fills in
      fine: {
        command,
        args: [
          ...args,
          "--token-file",
          "/home/u/.token",
          "--api-key",
          // biome-ignore lint/suspicious/noTemplateCurlyInString: a host's own expansion, as the host file holds it
          "${API_KEY}",
          "--auth-url",
          "https://x",
        ],
      },
    };
    const mcp = writeServers(u.files["claude-code"], entries);
    const { json, text, findings } = await doctorOf(u, mcp);
    expect(json.code).toBe(1);
    const onCommandLine = findings.filter((f) => f.what.includes("passes a credential on its command line"));
    expect(onCommandLine.map((f) => f.what)).toEqual([
      `${mcp}: server "flagged" passes a credential on its command line, in clear (the value of "--api-key" in its "args"): every process of this user can read it in the file, and every process on the machine in the process list while the server runs`,
      `${mcp}: server "joined" passes a credential on its command line, in clear (the value of "--token" in its "args"): every process of this user can read it in the file, and every process on the machine in the process list while the server runs`,
    ]);
    expect(findings.filter((f) => f.what.includes('server "fine"'))).toEqual([]);
    expectNoValue([json.stdout, json.stderr, text.stdout, text.stderr], [key, token]);
  });
});
