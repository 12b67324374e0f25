// The redactor over runs of millions of characters, in a node whose regular expressions V8
// compiles unoptimized. V8 does that by itself for a pattern over 20 KB, and in a process that
// has compiled more than 1 MB of regular expressions and holds 16 MB of machine code
// (TooMuchRegExpCode in its regexp.cc): a test worker that has run many files (vitest
// `isolate: false`), any long-lived process. Unoptimized, `[^\s]+` is a loop that keeps a
// backtracking entry per character (the optimized compile rewrites it `[^\s][^\s]*`, whose loop
// keeps one), and throws RangeError past 64 MiB of them. In a whole-suite run the four cases
// that fail here without the fix (`password=` and 8 MiB of letters, a long name before `=`, a
// value of schema type words, a long event-type name) came out `[redacted]` whole, the rule
// having thrown, and passed alone. `--no-regexp-optimization` puts every process in that case;
// `--regexp-interpret-all` adds the bytecode interpreter's own stack. Each result must be what
// test/util/redact-large.test.ts expects in a fresh process.
import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";

const REDACT = pathToFileURL(resolve("dist/util/redact.js")).href;

/** Cases: name → [what the redactor gave, what it should give]. Run in the child. */
const CASES = `
const MiB = 1024 * 1024;
const run = (n, c = "a") => c.repeat(n);
// Each long run is LONG characters or a little more: past the 4 Mi backtracking entries (64 MiB)
// at which V8 throws, so a rule that keeps an entry per character throws on it; the first case
// checks that it does in this node. 4.5 MiB where these runs were 8 MiB, then 5: the cost is
// linear in it, and node 20 throws from 4 Mi characters on with either set of flags below
// (bisected), so an eighth more is still past it; should a node move the limit, the first case fails.
const LONG = 4.5 * MiB;
const long = (unit = "a") => unit.repeat(Math.ceil(LONG / unit.length));
const R = "[redacted]";
let x = 12345;
// the same LONG pseudo-random hex digits, written into a buffer: an array of 8 Mi one-character
// strings joined took each child 2 s before its first case
const hex = Buffer.alloc(LONG);
for (let i = 0; i < hex.length; i++) hex[i] = "0123456789abcdef".charCodeAt((x = (x * 1103515245 + 12345) >>> 0) >>> 28);
const DIGEST = "sha256:" + hex.toString("latin1");
const text = (secret, shown) => () => [redactText("before " + secret + " after"), "before " + shown + " after"];
const cases = {
  "a run written [^\\s]+ over LONG characters throws in this node": () => {
    try {
      return [String(/x[^\\s]+y/.exec("x" + long())), "RangeError"];
    } catch (e) {
      return [e instanceof RangeError ? "RangeError" : String(e), "RangeError"];
    }
  },
  "a PEM private key": text("-----BEGIN RSA PRIVATE KEY-----" + long("A") + "-----END RSA PRIVATE KEY-----", "-----BEGIN RSA PRIVATE KEY-----" + R + "-----END RSA PRIVATE KEY-----"),
  "a bearer token": text("Bearer " + long(), "Bearer " + R),
  "a bearer token after millions of blanks": text("Bearer" + long(" ") + "abc123XYZdef", "Bearer" + long(" ") + R),
  "a bearer token in a header": text("Authorization: Bearer " + long(), "Authorization: Bearer " + R),
  "a JWT": text("eyJ" + run(4 * MiB) + "." + run(4 * MiB) + "." + run(1000), R),
  "a GitHub token": text("ghp_" + long(), R),
  "a Slack token": text("xoxb-" + long(), R),
  "an sk- key": text("sk-live-" + long(), R),
  "an npm token": text("npm_" + long(), R),
  "a Google key": text("AIza" + long(), R),
  "a name=value pair": text("password=" + long(), "password=" + R),
  "a name: value pair, quoted": text("'token': '" + long() + "'", "'token': '" + R + "'"),
  "a long name before =": text("password" + long("a_") + "=hunter2hunter2", "password" + long("a_") + "=" + R),
  "a value of schema type words": text("password=" + long("string|") + "x", "password=" + R),
  "a long name that says what happened to a credential": () => {
    const t = long("a_") + "token_denied: the vault is locked";
    return [redactText(t), t];
  },
  "a long JWT header alone": () => {
    const t = "eyJ" + long() + " then";
    return [redactText(t), t];
  },
  // URLs (urlQueries.ts, urlUsers.ts)
  "a long URL": text("https://h/" + long(), "https://h/" + long()),
  "a long query value": text("https://h/?q=" + long(), "https://h/?q=" + long()),
  "a long query name": text("https://h/?" + long() + "=1", "https://h/?" + long() + "=" + R),
  "a long token in a query": text("https://h/?token=" + long(), "https://h/?token=" + R),
  "a long run of escapes in a query": text("https://h/?q=" + long("%41"), "https://h/?q=" + long("%41")),
  "a long run of escapes in a path": text("https://h/" + long("%41"), "https://h/" + long("%41")),
  "a long token as a URL's user": text("https://" + long("a1") + "@h/", "https://" + R + "@h/"),
  "a long hex token as a URL's user": text("https://" + long("ab12") + "@h/", "https://" + R + "@h/"),
  "a long password in a URL": text("https://u:" + long() + "@h/", "https://u:" + R + "@h/"),
  // command lines (commandLine.ts) and values under a suspicious name (names.ts looksRandom)
  "a long port after -p": () => [JSON.stringify(redactArgv(["-p", long("1")])), JSON.stringify(["-p", long("1")])],
  "a long port after -p, shown": () => [displayCommand(["x", "-p", long("1")]), 'x -p "[' + LONG + '-char argument]"'],
  "a long sha256 digest under a key": () => [redactValue({ key: DIGEST }).key, DIGEST],
  "a long sha256 digest in a query": text("https://h/?k=" + DIGEST, "https://h/?k=" + DIGEST),
};
`;

/** Each case's outcome in a node started with `flags`: "ok", or what went wrong. */
function runChild(flags: string[]): Promise<Record<string, string>> {
  const script = `
const { displayCommand, redactArgv, redactText, redactValue } = await import(${JSON.stringify(REDACT)});
${CASES}
const out = {};
for (const [name, f] of Object.entries(cases)) {
  try {
    const [got, want] = f();
    out[name] = got === want ? "ok" : "gave " + JSON.stringify(String(got).slice(0, 60)) + " (" + String(got).length + " chars)";
  } catch (e) {
    out[name] = "threw " + String(e);
  }
}
console.log(JSON.stringify(out));
`;
  return new Promise((done, fail) => {
    execFile(
      process.execPath,
      [...flags, "--input-type=module", "-e", script],
      { maxBuffer: 1024 * 1024 },
      (err, stdout, stderr) =>
        err ? fail(new Error(`${err.message}\n${stderr}`)) : done(JSON.parse(stdout)),
    );
  });
}

describe("the redactor over millions of characters, whatever V8 made of its regular expressions", () => {
  it.each([[["--no-regexp-optimization"]], [["--no-regexp-optimization", "--regexp-interpret-all"]]])(
    "node %j: each shape redacted as in a fresh process",
    async (flags) => {
      const got = await runChild(flags);
      expect(Object.keys(got).length).toBeGreaterThan(0);
      expect(got).toEqual(Object.fromEntries(Object.keys(got).map((name) => [name, "ok"])));
    },
    240_000,
  );
});
