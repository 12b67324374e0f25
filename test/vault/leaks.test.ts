// A released credential value reaches nothing but the server: a real gateway in front of the
// vaulted fixture (env delivery), whose tools return the value raw, base64 (alone and inside
// longer data), URL-encoded (as encodeURIComponent, Python's quote() and Go's PathEscape do),
// form-encoded, JSON-quoted and in hex, print it to stderr and put it in a
// tool description. Every form of the value is then searched for, and never found, in the
// client's results, the gateway's stderr, every byte of the state directory (SQLite db and WAL
// included), `audit export`, `ps -eo args`, and every `--json` command output.
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { ResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { MAX_STDERR_LINE } from "../../src/supervisor/stderrLines.js";
import { formsOf } from "../../src/vault/valueForms.js";
import { decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { sleep } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { asBytes, everyFile, storeSecret, vaultedProject } from "./helpers.js";

// Quotes, a backslash, '/', '+', '=', a space and non-ASCII: every encoding differs from the raw value.
const SECRET = 'Zq7"w/+ é\\tok-9Xü=v41';
const MARK = "[redacted:api-token]";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

// biome-ignore lint/suspicious/noExplicitAny: tool results are read loosely
const textOf = (r: any): string => r.content?.[0]?.text ?? "";

/** The forms of SECRET found in `text` (none, we hope), for a readable failure. */
function formsIn(text: string, forms = formsOf(SECRET)): string[] {
  return forms.filter((f) => text.includes(f));
}

describe("a released credential value leaks nowhere", () => {
  it("results, stderr, the state directory, exports, ps and every --json output hold no form of it", async () => {
    const stateDir = newStateDir();
    const pass = passphraseEnv();
    cleanup.push(async () => {
      await runCli(["lock"], { stateDir });
    });
    await storeSecret(stateDir, "api-token", SECRET, "--deliver", "env");
    expect((await runCli(["unlock"], { stateDir, env: pass })).code).toBe(0);
    const project = vaultedProject({
      credentials: { API_TOKEN: { secret: "api-token", deliver: "env" } },
      approval: { default: "none", tools: { reveal: "session" } },
    });
    cleanup.push(() => project.cleanup());
    const gw = await startGateway({ args: ["vaulted"], cwd: project.dir, stateDir });
    cleanup.push(() => gw.close());

    const { tools } = await gw.client.listTools();
    // the description named the value: the catalog the client (and the store) got is scrubbed
    expect(tools.find((t) => t.name === "describe")?.description).toBe(
      `Describes the connection (key ${MARK})`,
    );

    // the first reveal asks a human: the review names the scope, and says no tool declares its own
    const first = gw.client.callTool({ name: "reveal", arguments: { form: "raw", note: "raw" } });
    const req = await nextStoredRequest(stateDir);
    const shown = await runCli(["approvals"], { stateDir });
    expect(shown.stdout).toContain("credentials api-token");
    expect(shown.stdout).toContain(
      "this server declares no per-tool scopes: every tool may use every credential",
    );
    await decideByCli(stateDir, "approve", req.request);
    expect(textOf(await first)).toBe(`raw ${MARK}`);

    for (const form of ["base64", "base64url", "url", "form", "json", "hex", "pyquote", "gopath"]) {
      const r = await gw.client.callTool({ name: "reveal", arguments: { form, note: form } });
      expect(textOf(r), form).toContain(MARK);
    }
    // inside longer base64 data, at each of the three alignments (the note shifts the value)
    for (const note of ["a", "ab", "abc"]) {
      const r = await gw.client.callTool({ name: "reveal", arguments: { form: "base64-inside", note } });
      expect(textOf(r), note).toContain(MARK);
    }
    expect(textOf(await gw.client.callTool({ name: "describe", arguments: {} }))).toBe(
      `connected with ${MARK}`,
    );
    await gw.client.callTool({ name: "whisper", arguments: {} });
    await gw.waitForStderr(/token=\[redacted:api-token\] b64=\[redacted:api-token\]/);
    // on a line longer than the 64 KiB cap, the value straddling where it would be cut
    await gw.client.callTool({ name: "whisper", arguments: { pad: MAX_STDERR_LINE - 5 } });
    // the cut moved to the end of the value: the first piece ends with it redacted
    await gw.waitForStderr(/^\[vaulted\] x+\[redacted:api-token\] \[line cut: continued on the next line\]$/);
    await gw.waitForStderr(/^\[vaulted\] y+ padded$/);
    // a response whose id is the value: dropped, and the warning names the id scrubbed
    expect(textOf(await gw.client.callTool({ name: "stray", arguments: {} }))).toBe("strayed");
    await gw.waitForStderr(/unknown id "\[redacted:api-token\]"/);

    const ps = spawnSync("ps", ["-eo", "args"], { encoding: "utf8" }).stdout;
    expect(ps.length).toBeGreaterThan(0);
    // the holder, the one process that holds the opened secret: handed it over a pipe, never in
    // its command line or its environment (which any process of the user may read in /proc)
    const holders = readdirSync(stateDir).filter((f) => /^vault-holder-\d+\.pid$/.test(f));
    expect(holders).toHaveLength(1);
    const holderPid = Number(/\d+/.exec(holders[0]!)![0]);
    const holderProc = ["cmdline", "environ"].map((f) =>
      readFileSync(`/proc/${holderPid}/${f}`).toString("utf8").replaceAll("\0", " "),
    );
    const outputs: Record<string, string> = {
      "client results": JSON.stringify(gw.received()),
      "gateway stderr": gw.stderr(),
      "ps -eo args": ps,
      "the holder's /proc cmdline": holderProc[0]!,
      "the holder's /proc environ": holderProc[1]!,
    };
    const json = [
      ["status", "--json"],
      ["approvals", "--json"],
      ["grants", "--json"],
      ["vault", "list", "--json"],
      ["audit", "sessions", "--json"],
      ["audit", "activity", "--json"],
      ["audit", "export"],
    ];
    for (const args of json) {
      const r = await runCli(args, { stateDir, env: pass });
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(0);
      outputs[args.join(" ")] = r.stdout + r.stderr;
    }
    for (const [what, text] of Object.entries(outputs)) expect(formsIn(text), what).toEqual([]);

    // the activity view names the scope each call used
    const activity = JSON.parse(outputs["audit activity --json"]!) as {
      tool: string;
      credentials: string[];
    }[];
    const reveals = activity.filter((a) => a.tool === "reveal");
    expect(reveals.length).toBeGreaterThan(0);
    for (const a of reveals) expect(a.credentials).toEqual(["api-token"]);

    // status says plainly that the server holds the value for its life
    const status = await runCli(["status"], { stateDir });
    expect(status.stdout).toContain("held by the server process for its whole life");
    const statusJson = JSON.parse(outputs["status --json"]!) as {
      gateways: { heldInEnvironment: { scopes: string[] } | null }[];
    };
    expect(statusJson.gateways[0]?.heldInEnvironment?.scopes).toEqual(["api-token"]);

    // every byte of the state directory, the SQLite db and its WAL included, while the gateway runs
    await sleep(50);
    const files = everyFile(stateDir);
    expect(files.some((f) => f.path.endsWith("portcullis.db-wal") || f.path.endsWith("portcullis.db"))).toBe(
      true,
    );
    const byteForms = formsOf(SECRET).map(asBytes);
    for (const f of files) expect(formsIn(f.text, byteForms), f.path).toEqual([]);
    await gw.close();
    for (const f of everyFile(stateDir)) expect(formsIn(f.text, byteForms), f.path).toEqual([]);
  });
});

describe("a released value spelled with JSON escapes JSON.stringify never writes", () => {
  it("is redacted in results, keys, JSON text inside a result, the stored catalog and stderr", async () => {
    const stateDir = newStateDir();
    const pass = passphraseEnv();
    cleanup.push(async () => {
      await runCli(["lock"], { stateDir });
    });
    await storeSecret(stateDir, "api-token", SECRET, "--deliver", "env");
    expect((await runCli(["unlock"], { stateDir, env: pass })).code).toBe(0);
    // the fixture's own JSON writer spells the value with \uXXXX escapes (test/fixtures/servers/vaulted.mjs)
    const project = vaultedProject({
      credentials: { API_TOKEN: { secret: "api-token", deliver: "env" } },
      approval: { default: "none" },
      env: { FIXTURE_SPELL: "1" },
    });
    cleanup.push(() => project.cleanup());
    const gw = await startGateway({ args: ["vaulted"], cwd: project.dir, stateDir });
    cleanup.push(() => gw.close());

    const { tools } = await gw.client.listTools();
    expect(tools.find((t) => t.name === "keyed")?.description).toBe(`Key ${MARK}`);
    // biome-ignore lint/suspicious/noExplicitAny: a tool result read loosely
    const r: any = await gw.client.callTool({ name: "spell", arguments: {} });
    expect(textOf(r)).toBe(`first ${MARK} every ${MARK}`);
    expect(r.structuredContent).toEqual({ [MARK]: `{"token":"${MARK}"}` });
    await gw.waitForStderr(/\[vaulted\] spelled \[redacted:api-token\]/);
    // control characters are shown as escapes: nothing the server wrote reaches the terminal raw
    const ansi = await gw.waitForStderr(/ansi /);
    expect(ansi).toContain(`ansi ${SECRET.slice(0, 5)}\\u001b[0m`);
    expect(ansi).toContain("\\u000d\\u0007 done");
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the controls are what it looks for
    expect(gw.stderr()).not.toMatch(/[\u001b\r\u0007]/);

    const show = await runCli(["catalog", "show", "vaulted"], { stateDir });
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toContain(MARK);
    const outputs = {
      "client results": JSON.stringify(gw.received()),
      "gateway stderr": gw.stderr(),
      "catalog show": show.stdout + show.stderr,
    };
    for (const [what, text] of Object.entries(outputs)) expect(formsIn(text), what).toEqual([]);
    const byteForms = formsOf(SECRET).map(asBytes);
    for (const f of everyFile(stateDir)) expect(formsIn(f.text, byteForms), f.path).toEqual([]);
  });
});

/**
 * A gateway with PORTCULLIS_DEBUG=1 in front of the vaulted fixture, `value` stored, unlocked and
 * delivered in its environment as api-token; no tool asks for approval. Its catalog is listed.
 */
async function tracedGatewayHolding(value: string) {
  const stateDir = newStateDir();
  cleanup.push(async () => {
    await runCli(["lock"], { stateDir });
  });
  await storeSecret(stateDir, "api-token", value, "--deliver", "env");
  expect((await runCli(["unlock"], { stateDir, env: passphraseEnv() })).code).toBe(0);
  const project = vaultedProject({
    credentials: { API_TOKEN: { secret: "api-token", deliver: "env" } },
    approval: { default: "none" },
  });
  cleanup.push(() => project.cleanup());
  const gw = await startGateway({
    args: ["vaulted"],
    cwd: project.dir,
    stateDir,
    env: { PORTCULLIS_DEBUG: "1" },
  });
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  return gw;
}

describe("PORTCULLIS_DEBUG=1: the gateway's trace of every message", () => {
  it("quotes no form of a released value: ids the server routes by, a malformed request, the client's own words", async () => {
    const gw = await tracedGatewayHolding(SECRET);
    // the server's ping with the value as its id (traced, relayed under the gateway's id), the
    // same without "jsonrpc" (traced, warned about, answered), a stray response with it as its id
    expect(textOf(await gw.client.callTool({ name: "ask", arguments: {} }))).toBe("asked");
    expect(textOf(await gw.client.callTool({ name: "stray", arguments: {} }))).toBe("strayed");
    // the client's own words: a call whose argument is the value, and a method named by it
    await gw.client.callTool({ name: "reveal", arguments: { form: "raw", note: SECRET } });
    await gw.client.request({ method: SECRET, params: {} }, ResultSchema).catch(() => {});
    await gw.waitForStderr(/unknown id "\[redacted:api-token\]"/);
    await gw.waitForStderr(/invalid message from the server: missing "jsonrpc"/);
    expect(formsIn(gw.stderr())).toEqual([]);
    // each trace line is there, with the value redacted where it stood
    expect(gw.stderr()).toMatch(/invalid message from the server: missing "jsonrpc".*\[redacted:api-token\]/);
    expect(gw.stderr()).toMatch(/debug: ← server .*"id\\":\\"\[redacted:api-token\]/);
    expect(gw.stderr()).toMatch(/debug: ← client .*\[redacted:api-token\]/);
  });
});

describe("a released value of digits, as the id of a server's message", () => {
  it("is never rounded into view: the client and the log get no run of its digits", async () => {
    // 20 digits: read as a JSON number, rounded to its first 16-17, which no longer hold the value
    const DIGITS = "98765432109876543210";
    const gw = await tracedGatewayHolding(DIGITS);
    // a ping with the value as its id and in its body, the same without "jsonrpc", a stray response
    expect(textOf(await gw.client.callTool({ name: "ask", arguments: {} }))).toBe("asked");
    expect(textOf(await gw.client.callTool({ name: "stray", arguments: {} }))).toBe("strayed");
    await gw.waitForStderr(/unknown id \[redacted:api-token\]/);
    const ping = gw.received().find((m) => m.method === "ping");
    expect(ping?.params).toEqual({ _meta: { n: MARK } });
    const leading = DIGITS.slice(0, 8);
    expect(JSON.stringify(gw.received())).not.toContain(leading);
    expect(gw.stderr()).not.toContain(leading);
  });
});

describe("vault set: bad input", () => {
  it("an empty or blank value is refused in one sentence and nothing is stored", async () => {
    const stateDir = newStateDir();
    for (const input of ["", "\n", "   \n"]) {
      const r = await runCli(["vault", "set", "api-token", "--from-stdin", "--deliver", "env"], {
        stateDir,
        env: passphraseEnv(),
        input,
      });
      expect(r.code).toBe(2);
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
      expect(r.stderr).toMatch(/the value is (empty|only whitespace); nothing was stored/);
    }
    const list = JSON.parse((await runCli(["vault", "list", "--json"], { stateDir })).stdout);
    expect(list.secrets).toEqual([]);
  });
});

describe("vault set: a short value", () => {
  it("is stored, with a note that scrubbing it can collide with ordinary text", async () => {
    const stateDir = newStateDir();
    const r = await runCli(["vault", "set", "pin", "--from-stdin", "--deliver", "env"], {
      stateDir,
      env: passphraseEnv(),
      input: "4711\n",
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain("can collide with ordinary text");
    expect(r.stdout + r.stderr).not.toContain("4711");
  });
});

describe("run: every configured scope must be in the vault", () => {
  it("a scope with no secret is an error at start naming the key and the file (exit 2)", async () => {
    const stateDir = newStateDir();
    const project = vaultedProject({
      credentials: { API_TOKEN: { secret: "api-token", deliver: "env" }, OTHER: "not-stored" },
    });
    cleanup.push(() => project.cleanup());
    await storeSecret(stateDir, "api-token", SECRET, "--deliver", "env");
    const r = await runCli(["run", "vaulted"], { cwd: project.dir, stateDir });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("servers.vaulted.credentials.OTHER");
    expect(r.stderr).toContain(`${project.dir}/portcullis.json`);
    expect(r.stderr).toContain("vault set not-stored");
  });
});
