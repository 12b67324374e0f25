// A word given where a command does not take it may be the passphrase or a secret: every refusal
// names the flag or counts the words, and the value itself never reaches stdout or stderr. Each
// case runs the real CLI against a state directory with a keyring.
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

const SECRET = "sk-live-7f3c9a1e44b2THESECRET";

// Every way a value can be given where it does not belong: `--flag=VALUE`, `--flag VALUE` for an
// unknown or valueless flag, a bad value of a known flag, and a stray word.
const CASES: string[][] = [
  ["vault", "set", "inventory-api", `--value=${SECRET}`],
  ["vault", "set", "inventory-api", "--value", SECRET],
  ["vault", "set", "inventory-api", "--from-stdin", SECRET],
  ["vault", "set", "inventory-api", `--deliver=${SECRET}`],
  ["vault", "set", "inventory-api", "--host", `${SECRET}/path`],
  ["vault", "set", "inventory-api", `--from-stdin=${SECRET}`],
  ["vault", "list", SECRET],
  ["vault", "list", `--json=${SECRET}`],
  ["vault", "rm", "inventory-api", SECRET],
  ["init", SECRET],
  ["init", `--passphrase=${SECRET}`],
  ["unlock", SECRET],
  ["unlock", "--for", SECRET],
  ["unlock", `--passphrase=${SECRET}`],
  ["lock", SECRET],
  ["audit", "activity", SECRET],
  ["audit", "sessions", `--key=${SECRET}`],
  ["audit", "verify", SECRET],
  ["audit", "show", "1", SECRET],
  // in the ID's place: `approve` asks for the passphrase, and this is where one who expected to
  // give it would type it
  ["approve", SECRET],
  ["deny", SECRET, "--reason", "no"],
  ["revoke", SECRET],
  ["approve", "REQ", SECRET],
  // in a command's or subcommand's place: a secret pasted on the wrong line
  [SECRET],
  ["catalog", SECRET, "inventory"],
  ["vault", SECRET],
  ["audit", SECRET],
  ["passkey", SECRET],
  ["demo", SECRET],
  ["demo", `--keep=${SECRET}`],
  ["approve", "REQ", "--for", SECRET],
  ["run", SECRET, "--", "node", "server.js"],
  ["run", `--hold-timeout=${SECRET}`, "--", "node", "server.js"],
  ["run", `--on-change=${SECRET}`, "--", "node", "server.js"],
  ["status", `--token=${SECRET}`],
  ["doctor", SECRET],
  ["catalog", "diff", "inventory", SECRET, "2"],
  ["console", `--port=${SECRET}`],
  ["wrap", `--password=${SECRET}`],
  // a known flag's bad value (an address that is none)
  ["run", "--listen", SECRET, "--", "node", "server.js"],
  ["run", `--listen=${SECRET}`, "--", "node", "server.js"],
  ["run", "--listen", `${SECRET}:8080`, "--", "node", "server.js"],
  // where a passkey ID goes: no shape tells an ID from a secret, so a missing one is not shown
  ["passkey", "rm", SECRET],
  ["passkey", "rm", `${SECRET}-and-more`],
  // a secret that starts with a dash, read as an option: before the command, and after it
  [`--${SECRET}`],
  [`-${SECRET}`],
  ["status", `--${SECRET}`],
  ["unlock", `-${SECRET}`],
  ["demo", `--${SECRET}`],
];

describe("a refused argument is never printed back", () => {
  // One test per command line: about 50 CLI processes in one test ran past the 60 s timeout on a
  // loaded machine (each is a node start). The test's name shows the value as <value>.
  for (const args of CASES) {
    const named = args.map((a) => a.replace(SECRET, "<value>")).join(" ");
    it(`across commands, in every form, the value reaches neither stdout nor stderr: portcullis ${named}`, async () => {
      const r = await runCli([...args, "--state-dir", newStateDir()], { env: passphraseEnv() });
      const shown = `portcullis ${args.join(" ")} → exit ${r.code}\n${r.stderr}`;
      expect(r.code, shown).toBe(2);
      expect(r.stderr, shown).not.toBe("");
      expect(r.stdout + r.stderr, shown).not.toContain("THESECRET");
    });
  }

  it("the refusal still says what was wrong: the flag by name, a stray word by count", async () => {
    const stateDir = newStateDir();
    const env = passphraseEnv();
    const at = async (args: string[]) => (await runCli([...args, "--state-dir", stateDir], { env })).stderr;
    expect(await at(["vault", "set", "x", `--value=${SECRET}`])).toContain("unknown option --value ");
    expect(await at(["init", SECRET])).toContain("portcullis init: unexpected argument (1, not shown");
    expect(await at(["unlock", SECRET, SECRET])).toContain("unlock: unexpected arguments (2, not shown");
    expect(await at(["audit", "activity", SECRET])).toContain("activity: unexpected argument (1, not shown");
    expect(await at(["unlock", "--for"])).toContain("unlock: --for needs a value");
    // a mistyped command still reads as one, and is named
    expect(await at(["lsit"])).toContain('unknown command "lsit"');
    expect(await at(["vault", "lsit"])).toContain('vault: unknown subcommand "lsit"');
    expect(await at(["demo", "--keep=1"])).toContain("demo: --keep takes no value");
  });
});

describe("an ID that is empty or not an ID", () => {
  it('is said to be so (an unset $ID is not a request named ""), with the list to look in for the state directory given; an ID in lower case is found', async () => {
    const stateDir = newStateDir();
    const env = passphraseEnv();
    const said = async (args: string[]) => {
      const r = await runCli([...args, "--state-dir", stateDir], { env });
      expect(r.code, args.join(" ")).toBe(2);
      return r.stderr;
    };
    expect(await said(["approve", ""])).toBe(
      `portcullis approve: the request ID given is empty; see 'portcullis approvals --state-dir ${stateDir}'.\n`,
    );
    expect(await said(["revoke", ""])).toBe(
      `portcullis revoke: the GRANT given is empty; see 'portcullis grants --state-dir ${stateDir}'.\n`,
    );
    expect(await said(["passkey", "rm", ""])).toBe(
      `portcullis passkey rm: give the passkey ID (see 'portcullis passkey list --state-dir ${stateDir}').\n`,
    );
    expect(await said(["deny", "x".repeat(100_000)])).toBe(
      `portcullis deny: the request ID given is not one (26 letters and digits, as 'portcullis approvals --state-dir ${stateDir}' shows them; not shown, in case it is a passphrase or a secret typed in the wrong place).\n`,
    );
    // ULIDs are case-insensitive: looked up as stored
    expect(await said(["approve", "01m8z1vbwg8q99d6cryje0396a"])).toBe(
      `portcullis approve: there is no approval request 01M8Z1VBWG8Q99D6CRYJE0396A; 'portcullis approvals --state-dir ${stateDir}' lists the pending ones.\n`,
    );
  });
});

describe("vault set parses like every other command", () => {
  it("--help prints the help and exits 0", async () => {
    const r = await runCli(["vault", "set", "--help"], { stateDir: newStateDir() });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("portcullis vault set NAME");
    // no form shown without --host or --deliver env: the command refuses one (exit 2)
    expect(r.stdout).toContain("portcullis vault set NAME [--from-stdin] --host HOST[:PORT]...\n");
    expect(r.stdout).toContain("portcullis vault set NAME [--from-stdin] --deliver env\n");
  });

  it("--host=H and --deliver=env are read like --host H and --deliver env", async () => {
    const stateDir = newStateDir();
    const env = passphraseEnv();
    const set = (args: string[], input: string) =>
      runCli(["vault", "set", ...args, "--from-stdin"], { stateDir, env, input });
    const http = await set(
      ["api", "--host=api.example.com", "--host=Other.example.com:8443"],
      "value-one-1234",
    );
    expect(http.stderr).toBe("");
    expect(http.code).toBe(0);
    expect(http.stdout).toContain(
      "secret api stored (deliver http to api.example.com, other.example.com:8443)",
    );
    const envd = await set(["--deliver=env", "token"], "value-two-1234");
    expect(envd.code, envd.stderr).toBe(0);
    expect(envd.stdout).toContain("secret token stored (deliver env)");
    const list = JSON.parse((await runCli(["vault", "list", "--json"], { stateDir })).stdout);
    expect(list.secrets.map((s: { name: string; deliver: string }) => [s.name, s.deliver])).toEqual([
      ["api", "http"],
      ["token", "env"],
    ]);
  });
});
