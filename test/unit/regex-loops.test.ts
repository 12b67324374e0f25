// Every regular expression under src/ (the redactor's are test/util/redact-patterns.test.ts's),
// read from its source: none may repeat with a quantifier that V8, compiling the pattern
// unoptimized, runs as a loop keeping one backtracking entry per repetition, unless its input is
// bounded. Such a loop throws RangeError ("Maximum call stack size exceeded") past 64 MiB of
// entries, a run of about 4 MiB, and V8 compiles unoptimized in any process that has compiled
// more than 1 MB of regular-expression code: a gateway that has run for a while. A client's
// method and arguments and a server's catalog, results and notifications are as long as a message
// allows (64 MiB): a method of `tools/call` and 8 MiB of blanks took the gateway down, and a
// description of 8 MiB of letters left the catalog unserved (test/gateway/unoptimized-regex.test.ts).
// The rules (what is flagged, what is allowed) are in test/util/redact-patterns.test.ts's header.
// A flagged pattern is rewritten (`[…]+` as `[…][…]*`, or a loop) or listed in BOUNDED_INPUT
// with what bounds its input; an entry whose pattern is gone or rewritten fails, so that it
// cannot let the next pattern of that text through.
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { regexLiterals, unboundedLoops } from "../helpers/regexLoops.js";

/** The redactor, read by test/util/redact-patterns.test.ts with its own list. */
const REDACTOR = ["src/util/redact.ts", "src/util/redact/"];

function sources(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((f) => {
      const p = join(dir, f);
      if (statSync(p).isDirectory()) return sources(p);
      return p.endsWith(".ts") ? [p] : [];
    });
}

const FILES = sources("src").filter((f) => !REDACTOR.some((r) => f === r || f.startsWith(r)));

/** Who wrote what the pattern reads, and what bounds its length. */
const ARGV = "runs on a command-line argument or a configured value: the user's, never a peer's";
const USER_FILES = "runs on the user's own configuration files and state-directory names, never a peer's";
const PROC = "runs on what the kernel or ps writes about processes: fixed-width fields";

/** file, the pattern as written, why its input is short or trusted. */
const BOUNDED_INPUT: [string, string, string][] = [
  [
    "src/approval/chain.ts",
    "/^Authority=(.+)$/gm",
    "codesign's own report (macOS), read through spawnSync's 1 MiB maxBuffer",
  ],
  [
    "src/approval/passkeyAssertion.ts",
    "/^[A-Za-z0-9_-]+$/",
    "a passkey assertion's fields, from a console request body of at most 64 KiB (console/http.ts) or the store it was kept in",
  ],
  [
    "src/catalog/linearRegex.ts",
    "/^[0-9A-Fa-f]+$/",
    "the digits of a `\\u{…}` in a schema's pattern: a schema over 1 MiB (MAX_SCHEMA_BYTES) is refused before any pattern of it is compiled",
  ],
  ["src/catalog/fieldSummary.ts", "/^[\\w.:/@-]+$/", "shortWord checks `v.length <= max` (40) first"],
  [
    "src/catalog/unicodeProperties.ts",
    "/^[A-Za-z0-9_]+(=[A-Za-z0-9_]+)?$/",
    "a `\\p{…}` name of a pattern JavaScript's parser accepted first: one of the ~2,000 valid names",
  ],
  ["src/cli/args.ts", "/^[0-9]+$/", ARGV],
  [
    "src/cli/init.ts",
    "/^(?:portcullis\\.db(?:-wal|-shm|-journal)?|keyring\\.json(?:\\.\\d+\\.[0-9a-f]+\\.tmp)?)$/",
    "a file name in the state directory: at most 255 bytes",
  ],
  ["src/cli/run.ts", "/^[^A-Za-z0-9]+/", `${ARGV} (the server's command, for its label)`],
  ["src/cli/runRemote.ts", "/^[^A-Za-z0-9]+/", `${ARGV} (a configured URL's host, for its label)`],
  ["src/cli/unlockDuration.ts", "/^(?:(\\d+)h)?(?:(\\d+)m)?(?:(\\d+)s)?$/", ARGV],
  [
    "src/config/jsonSyntax.ts",
    "/at position (\\d+)/",
    "JSON.parse's own error message, whose position is a number",
  ],
  ["src/demo/consoleClient.ts", '/name="csrf" value="([^"]+)"/', "the demo reads pages of its own console"],
  [
    "src/demo/consoleClient.ts",
    '/<meta name="portcullis-proof" content="([^"]+)"/',
    "the demo reads pages of its own console",
  ],
  [
    "src/demo/consoleClient.ts",
    '/name="reviewed" value="([^"]+)"/',
    "the demo reads pages of its own console",
  ],
  [
    "src/demo/demo.ts",
    "/^portcullis\\[[^\\]]+\\]: new execution epoch/",
    "the demo reads its own gateway's log lines",
  ],
  [
    "src/identity/capture.ts",
    "/(\\d+\\.\\d+(?:\\.\\d+)?(?:[-+][0-9A-Za-z.-]+)?)/",
    "a runtime's `--version` output, read through execFile's 1 MiB maxBuffer",
  ],
  ["src/identity/entry.ts", "/^\\/+/", `${USER_FILES} (a word of the configured server command)`],
  ["src/identity/files.ts", "/\\s+/", "a script's `#!` line, read from its first 512 bytes"],
  ["src/identity/includeMatch.ts", "/\\/+$/", `${USER_FILES} (an include pattern)`],
  ["src/identity/procDescribe.ts", "/^btime\\s+(\\d+)/m", PROC],
  [
    "src/identity/procDescribe.ts",
    "/^\\s*(\\d+)\\s+(\\w{3}\\s+\\w{3}\\s+\\d+\\s+[\\d:]+\\s+\\d{4})\\s+(.*)$/",
    `${PROC} (macOS)`,
  ],
  ["src/identity/procDescribe.ts", "/\\s+/", `${PROC}; a command line on macOS, at most kern.argmax (1 MiB)`],
  [
    "src/identity/procLocks.ts",
    "/^\\d+:\\s+(\\S+)\\s+\\S+\\s+(\\S+)\\s+(-?\\d+)\\s+[0-9a-f]+:[0-9a-f]+:(\\d+)\\s+(\\d+)\\s+(\\d+|EOF)/",
    `${PROC} (/proc/locks)`,
  ],
  ["src/identity/procPeer.ts", "/^[0-9]+$/", PROC],
  ["src/identity/procPeer.ts", "/\\s+/", `${PROC} (/proc/net/tcp)`],
  ["src/identity/procPeer.ts", "/^[0-9a-fA-F:.]+$/", `${PROC} (/proc/net/tcp)`],
  ["src/identity/procRead.ts", "/^\\d+$/", `${PROC} (a field of /proc/PID/stat)`],
  ["src/identity/procRead.ts", "/^\\s*(\\S+)\\s+(.+?)\\s*$/", `${PROC} (macOS)`],
  ["src/identity/procRead.ts", "/\\s+/g", `${PROC} (ps's lstart, macOS)`],
  [
    "src/identity/procTree.ts",
    "/^\\s*(\\d+)\\s+(\\d+)\\s+(\\S+)\\s+(\\S+\\s+\\S+\\s+\\d+\\s+[\\d:]+\\s+\\d+)\\s+(.*)$/",
    `${PROC} (macOS)`,
  ],
  ["src/identity/procTree.ts", "/^\\s*(\\d+)\\s+(.*)$/", `${PROC} (macOS)`],
  ["src/identity/procTree.ts", "/\\s+/", `${PROC}; a command line on macOS, at most kern.argmax (1 MiB)`],
  [
    "src/identity/runners.ts",
    "/^(?:[a-z+]+:|\\.|\\/)/",
    `${USER_FILES} (a dependency spec of the user's project)`,
  ],
  [
    "src/identity/shell.ts",
    "/\\$(?:[@*#?$!]|\\d)|\\$\\{(?:[@*#]|\\d+)\\}/g",
    `${USER_FILES} (a word of a wrapper script)`,
  ],
  ["src/identity/tools.ts", "/^python(\\d+(\\.\\d+)?)?$/", "an executable's base name: at most 255 bytes"],
  [
    "src/keyring/keyringFormat.ts",
    "/^[A-Za-z0-9_-]+$/",
    "the keyring file, this user's own, written by portcullis",
  ],
  ["src/onboard/document.ts", "/\\n([ \\t]+)\\S/", USER_FILES],
  [
    "src/onboard/drill.ts",
    "/^MCP error -?\\d+: /",
    "the SDK's prefix to an error message: a JSON-RPC code printed as a number",
  ],
  ["src/onboard/tomlEdit.ts", "/^[A-Za-z0-9_-]+$/", USER_FILES],
  ["src/onboard/tomlEdit.ts", '/^"(?:[^"\\\\\\r\\n]|\\\\.)*"/', USER_FILES],
  ["src/onboard/tomlEdit.ts", "/^[A-Za-z0-9_-]+/", USER_FILES],
  ["src/onboard/tomlEdit.ts", "/[ \\t\\r\\n]+$/", USER_FILES],
  ["src/onboard/wrap.ts", "/[^A-Za-z0-9._-]+/g", `${USER_FILES} (a server's key in a host's configuration)`],
  ["src/onboard/wrap.ts", "/^[._-]+/", `${USER_FILES} (a server's key in a host's configuration)`],
  ["src/onboard/wrap.ts", "/-+$/", "a label cut to 64 characters (labelFor)"],
  [
    "src/relay/clientIds.ts",
    "/^(-?)(0|[1-9][0-9]*)(?:\\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/",
    "a client's number id: sameIdKey checks its text no longer than MAX_NUMBER_TEXT (1024) first",
  ],
  [
    "src/relay/clientIds.ts",
    "/^0+/",
    "the digits of a number id already checked no longer than MAX_NUMBER_TEXT (1024)",
  ],
  [
    "src/relay/clientIds.ts",
    "/0+$/",
    "the digits of a number id already checked no longer than MAX_NUMBER_TEXT (1024)",
  ],
  [
    "src/supervisor/remoteHeaders.ts",
    "/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/",
    `${ARGV} (a configured header name)`,
  ],
  [
    "src/supervisor/remoteSession.ts",
    "/^[\\x21-\\x7e]+$/",
    "unsendableVersion checks the length (MAX_VERSION_CHARS) first",
  ],
  ["src/supervisor/remoteWire.ts", "/^[0-9.]+$/", `${ARGV} (a configured URL's host)`],
  ["src/supervisor/spawn.ts", "/^(?:pipe|socket):\\[\\d+\\]$/", `${PROC} (a /proc/PID/fd link)`],
  ["src/transport/httpAccess.ts", "/^(?:\\[([0-9A-Fa-f:.]+)\\]|([^:[\\]]+)):([0-9]{1,5})$/", ARGV],
  [
    "src/transport/httpAccess.ts",
    "/^(\\[[0-9A-Fa-f:.]+\\]|[^:[\\]]+)(?::([0-9]{1,5}))?$/",
    "a Host header: node refuses a request whose head is over its 16 KiB maxHeaderSize",
  ],
  [
    "src/transport/httpAccess.ts",
    "/^Bearer\\s+(\\S+)\\s*$/i",
    "an Authorization header: node refuses a request whose head is over its 16 KiB maxHeaderSize",
  ],
  [
    "src/transport/httpSse.ts",
    "/^([A-Za-z0-9_-]+)\\.([0-9]+)$/",
    "a Last-Event-ID header: node refuses a request whose head is over its 16 KiB maxHeaderSize",
  ],
  [
    "src/vault/delivery.ts",
    "/^credentials in the environment of epoch (\\S+): (.+) \\(held by the server for its life\\)$/",
    "a status line the gateway wrote itself (envHeldLine)",
  ],
  [
    "src/vault/egress/hosts.ts",
    "/^(?:\\[([0-9A-Fa-f:.]+)\\]|([^:[\\]]+))(?::(\\d{1,5}))?$/",
    `${ARGV} (a credential's declared host)`,
  ],
  ["src/vault/egress/hosts.ts", "/^\\[([^\\]]+)\\](?::(\\d+))?$/", `${ARGV} (a credential's declared host)`],
  [
    "src/vault/egress/hosts.ts",
    "/^[a-z0-9]([a-z0-9-]{0,62})?(\\.[a-z0-9]([a-z0-9-]{0,62})?)*\\.?$/i",
    "a declared host, or a proxy request's target: in a head node caps at 16 KiB (maxHeaderSize) or the proxy at 64 KiB (MAX_HEAD_BYTES)",
  ],
  [
    "src/vault/egress/hosts.ts",
    "/^[0-9a-f:.]+$/i",
    "a declared host, or a proxy request's target: in a head node caps at 16 KiB (maxHeaderSize) or the proxy at 64 KiB (MAX_HEAD_BYTES)",
  ],
  [
    "src/vault/egress/hosts.ts",
    "/^(?:\\[([^\\]]+)\\]|([^:[\\]]+)):(\\d{1,5})$/",
    "a proxy request's target or Host header: in a head node caps at 16 KiB (maxHeaderSize) or the proxy at 64 KiB (MAX_HEAD_BYTES)",
  ],
  [
    "src/vault/egress/hosts.ts",
    "/:\\d+$/",
    "a proxy request's Host header or target: in a head node caps at 16 KiB (maxHeaderSize) or the proxy at 64 KiB (MAX_HEAD_BYTES)",
  ],
  [
    "src/vault/egress/http1.ts",
    "/^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$/",
    "a header name of a head the proxy reads only up to 64 KiB (MAX_HEAD_BYTES)",
  ],
  [
    "src/vault/egress/http1.ts",
    "/^[\\x21-\\x7e\\x80-\\xff]+$/",
    "a request target of a head the proxy reads only up to 64 KiB (MAX_HEAD_BYTES)",
  ],
  [
    "src/vault/egress/http1.ts",
    "/^(\\S+) (\\S+) HTTP\\/1\\.([01])$/",
    "a request line of a head the proxy reads only up to 64 KiB (MAX_HEAD_BYTES)",
  ],
  [
    "src/vault/egress/preload.ts",
    "/:\\d+$/",
    "runs in the server's own process (the egress preload), on its NO_PROXY entries",
  ],
  [
    "src/vault/liveHolders.ts",
    "/^vault-holder-(\\d+)\\.pid$/",
    "a file name in the state directory: at most 255 bytes",
  ],
  ["src/vault/valueForms.ts", "/=+$/", "the base64 of a stored secret, which ends in at most two `=`"],
];

describe("the regular expressions under src/ (the redactor aside)", () => {
  it("reads `\\p{…}`, `\\u{…}` and `\\k<…>` as one atom", () => {
    expect(unboundedLoops("/\\p{L}+/u")).toEqual(["\\p{L}+"]);
    expect(unboundedLoops("/\\p{L}\\p{L}*/u")).toEqual([]);
    expect(unboundedLoops("/\\u{41}{2}/u")).toEqual([]);
    expect(unboundedLoops("/(?<a>x)\\k<a>+/")).toEqual(["\\k<a>+"]);
  });

  it("repeat no run with a loop that keeps an entry per character, unless their input is bounded", () => {
    expect(FILES.length).toBeGreaterThan(100);
    const offending: string[] = [];
    const seen = new Set<string>();
    for (const file of FILES) {
      for (const literal of regexLiterals(file)) {
        const loops = unboundedLoops(literal);
        if (loops.length === 0) continue;
        const key = `${file} ${literal}`;
        seen.add(key);
        if (!BOUNDED_INPUT.some(([f, p]) => f === file && p === literal))
          offending.push(`${key}: ${loops.join(", ")}`);
      }
    }
    expect(offending).toEqual([]);
    // An entry whose pattern is gone or rewritten is stale: it would let the next one through.
    expect(BOUNDED_INPUT.map(([f, p]) => `${f} ${p}`).filter((k) => !seen.has(k))).toEqual([]);
  });
});
