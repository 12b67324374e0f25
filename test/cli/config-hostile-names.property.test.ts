// A name from portcullis.json in a configuration error is shown escaped, wherever in the file it
// is (a top-level or console key, a server label, an unknown key of a server, an env name, an
// approval.tools or tools name, a credentials or headers name, a key written twice, a credential
// scope or host a tool or credential names): the file may be a cloned project's, and a name in it
// an escape that repaints the terminal (ESC [2J), a line separator that starts a forged line
// (U+2028), or a bidi override that reorders what the human reads (U+202E). Invariant: no
// ConfigError message, and no byte of `doctor --json`'s output, holds a raw control, format (bidi)
// or line/paragraph separator character or a lone surrogate.
//
// Seen failing when broken: before keyPath escaped every hidden character and every section
// built its paths with it, `{"servers":{"a":{"command":"x","approval":{"tools":{"t\u001b[2J":
// "bad"}}}}}` gave "servers.a.approval.tools.t\u001b[2J must be one of …" with the ESC raw, in
// loadConfigFile and in doctor --json's finding.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfigFile } from "../../src/config/config.js";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";

/** What no output may carry raw: controls, format (bidi, zero-width) characters, U+2028/9, lone surrogates. */
const RAW_HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u;
/** The same in a whole output, whose lines end in newlines. */
const RAW_HIDDEN_IN_OUTPUT = /(?!\n)[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u;

const SPECIALS = [
  "\u001b[2J",
  "\u2028",
  "\u2029",
  "\u202e",
  "\u2066",
  "\u200f",
  "\u0085",
  "\u0007",
  "\n",
  "\u009b",
];

const hostileKey = fc.oneof(
  fc.string({ unit: "binary", maxLength: 12 }),
  fc.constantFrom(...SPECIALS),
  fc
    .tuple(
      fc.string({ maxLength: 6 }),
      fc.constantFrom(...SPECIALS),
      fc.string({ unit: "binary", maxLength: 6 }),
    )
    .map(([a, b, c]) => `${a}${b}${c}`),
);

const cmd = { command: "x" };
/** Each section of the file a name from it may sit in, as the file's text. */
const SECTIONS: Record<string, (k: string) => string> = {
  top: (k) => JSON.stringify({ servers: {}, [k]: 1 }),
  console: (k) => JSON.stringify({ servers: {}, console: { [k]: 1 } }),
  label: (k) => JSON.stringify({ servers: { [k]: cmd } }),
  serverKey: (k) => JSON.stringify({ servers: { a: { ...cmd, [k]: 1 } } }),
  env: (k) => JSON.stringify({ servers: { a: { ...cmd, env: { [k]: 1 } } } }),
  envName: (k) => JSON.stringify({ servers: { a: { ...cmd, env: { [`${k}=`]: "v" } } } }),
  approvalTool: (k) => JSON.stringify({ servers: { a: { ...cmd, approval: { tools: { [k]: "bad" } } } } }),
  approvalKey: (k) => JSON.stringify({ servers: { a: { ...cmd, approval: { [k]: 1 } } } }),
  tools: (k) => JSON.stringify({ servers: { a: { ...cmd, tools: { [k]: 1 } } } }),
  toolKey: (k) => JSON.stringify({ servers: { a: { ...cmd, tools: { t: { [k]: 1 } } } } }),
  toolScope: (k) => JSON.stringify({ servers: { a: { ...cmd, tools: { t: { credentials: [k] } } } } }),
  credentials: (k) => JSON.stringify({ servers: { a: { ...cmd, credentials: { [k]: 1 } } } }),
  credentialKey: (k) =>
    JSON.stringify({ servers: { a: { ...cmd, credentials: { E: { secret: "s", [k]: 1 } } } } }),
  credentialHost: (k) =>
    JSON.stringify({
      servers: { a: { ...cmd, credentials: { E: { secret: "s", deliver: "http", hosts: [k] } } } },
    }),
  identityKey: (k) => JSON.stringify({ servers: { a: { ...cmd, identity: { [k]: 1 } } } }),
  auditKey: (k) => JSON.stringify({ servers: { a: { ...cmd, audit: { [k]: 1 } } } }),
  header: (k) => JSON.stringify({ servers: { a: { url: "https://example.com/mcp", headers: { [k]: 1 } } } }),
  headerKey: (k) =>
    JSON.stringify({
      servers: { a: { url: "https://example.com/mcp", headers: { X: { secret: "s", [k]: 1 } } } },
    }),
  urlQuery: (k) =>
    JSON.stringify({
      servers: { a: { url: `https://example.com/mcp?${encodeURIComponent(`${k}token`)}=x` } },
    }),
  cwd: (k) => JSON.stringify({ servers: { a: { ...cmd, cwd: `missing-${k}` } } }),
  twice: (k) => `{"servers": {}, "console": {${JSON.stringify(k)}: 1, ${JSON.stringify(k)}: 2}}`,
  twiceNested: (k) =>
    `{"servers": {${JSON.stringify(k)}: {"command": "x"}, ${JSON.stringify(k)}: {"command": "y"}}}`,
};

const dir = tempDir("portcullis-config-names-");

/** The message loadConfigFile refuses `text` with, or null when it loads. */
function refusal(text: string): string | null {
  const file = join(dir, "portcullis.json");
  writeFileSync(file, text);
  try {
    loadConfigFile(file);
    return null;
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    return e.message;
  }
}

describe("names from portcullis.json in configuration errors", () => {
  it("every section: no raw control, bidi or separator character in the message", () => {
    fc.assert(
      fc.property(fc.constantFrom(...Object.keys(SECTIONS)), hostileKey, (section, key) => {
        const message = refusal(SECTIONS[section]!(key));
        if (message !== null) expect(message, `${section} ${JSON.stringify(key)}`).not.toMatch(RAW_HIDDEN);
      }),
      { numRuns: 600 },
    );
  });

  it("the brief's example is refused naming the tool, escaped", () => {
    const message = refusal('{"servers":{"a":{"command":"x","approval":{"tools":{"t\\u001b[2J":"bad"}}}}}');
    expect(message).toContain('servers.a.approval.tools["t\\u001b[2J"] must be one of');
  });

  it("doctor --json: no raw hidden character in its output, and the finding shows the name escaped", async () => {
    const stateDir = newStateDir();
    const cases: [string, string][] = [
      ["approvalTool", "t\u001b[2J"],
      ["label", "a\u202eb"],
      ["env", "E\u2028X"],
      ["twice", "k\u0085"],
      ["credentialHost", "h\u2066"],
      ["toolScope", "s\u001b]0;x\u0007"],
    ];
    for (const [section, key] of cases) {
      const d = tempDir("portcullis-config-names-cli-");
      writeFileSync(join(d, "portcullis.json"), SECTIONS[section]!(key));
      const r = await runCli(["doctor", "--json"], { stateDir, cwd: d, env: { HOME: d } });
      const shown = `${section}: exit ${r.code}\n${r.stderr}\n${r.stdout}`;
      expect(r.stdout, shown).not.toMatch(RAW_HIDDEN_IN_OUTPUT);
      expect(r.stderr, shown).not.toMatch(RAW_HIDDEN_IN_OUTPUT);
      const findings = JSON.parse(r.stdout).findings as { what: string }[];
      const finding = findings.find((f) => f.what.startsWith(join(d, "portcullis.json")));
      expect(finding, shown).toBeDefined();
      expect(finding!.what, shown).not.toMatch(RAW_HIDDEN);
    }
  });
});
