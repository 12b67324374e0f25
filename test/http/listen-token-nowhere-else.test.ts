// "The token is shown by `portcullis status` (text and `--json`) to the user who owns the state
// directory, and nowhere else" (docs/security.md, the HTTP front). The token lives in
// `<stateDir>/listen/<label>.token` (0600); status reads it from there. Everything else a gateway
// and the CLI leave or print after a real session is searched for it, in every encoding a writer
// could have used (the hex text, its raw 32 bytes, base64 and base64url of both): every file of
// the state directory read as bytes (the store, its -wal and -shm included) but the token file,
// the gateway's stderr, `approvals` (text, --verbose, --json) while a call waits, `grants`,
// `audit export`, `audit activity`/`sessions` and every record decrypted, `status --json` once
// the token field is taken out. The client is an agent as they are written: the token on its
// command line and in its environment, as the Authorization header.
import { spawn } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents, decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { exitWithOutput } from "../helpers/exitWithOutput.js";
import { runCli } from "../helpers/gateway.js";
import { fixtureCommand, NODE } from "../helpers/paths.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { startListener } from "./listen.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const LABEL = "tok-search";

// initialize, initialized, then two calls of the echo tool (the first waits for a human, the
// second runs under the session grant), then DELETE: the session's run ends
const CLIENT = `
const url = process.argv[1];
const token = process.argv[2] ?? process.env.MCP_TOKEN;
const headers = { authorization: "Bearer " + token, accept: "application/json, text/event-stream", "content-type": "application/json" };
const post = async (body, session) => {
  const r = await fetch(url, { method: "POST", headers: session ? { ...headers, "mcp-session-id": session } : headers, body: JSON.stringify(body) });
  return { session: r.headers.get("mcp-session-id"), text: await r.text() };
};
const init = await post({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "agent", version: "1" } } });
await post({ jsonrpc: "2.0", method: "notifications/initialized" }, init.session);
const one = await post({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "echo", arguments: { message: "first" } } }, init.session);
const two = await post({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "echo", arguments: { message: "second" } } }, init.session);
await fetch(url, { method: "DELETE", headers: { ...headers, "mcp-session-id": init.session } });
process.stdout.write(one.text + "\\n" + two.text);
`;

/** Every form of the token a writer could have stored or printed. */
function forms(token: string): Buffer[] {
  const bytes = Buffer.from(token, "hex");
  expect(bytes).toHaveLength(32);
  const text = Buffer.from(token, "utf8");
  return [
    text,
    Buffer.from(token.toUpperCase(), "utf8"),
    bytes,
    Buffer.from(bytes.toString("base64")),
    Buffer.from(bytes.toString("base64url")),
    Buffer.from(text.toString("base64")),
    Buffer.from(text.toString("base64url")),
    // a UTF-16 copy (a JavaScript string dumped as it is in memory)
    Buffer.from(token, "utf16le"),
  ];
}

function containsToken(haystack: Buffer | string, token: string): boolean {
  const b = typeof haystack === "string" ? Buffer.from(haystack, "utf8") : haystack;
  // the 16-character halves too: a token cut in a shortened line is still a leak of half of it
  const halves = [token.slice(0, 32), token.slice(32)].map((h) => Buffer.from(h, "utf8"));
  return [...forms(token), ...halves].some((f) => b.includes(f));
}

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const st = statSync(path);
    if (st.isDirectory()) out.push(...filesUnder(path));
    else if (st.isFile()) out.push(path);
  }
  return out;
}

describe("the run --listen bearer token", () => {
  it("after a session with an approved call, is in the token file and status, and nowhere else", async () => {
    const stateDir = newStateDir();
    const l = await startListener(fixtureCommand("echo"), {
      stateDir,
      label: LABEL,
      args: ["--approval-timeout", "60000"],
    });
    cleanup.push(() => l.close());
    const token = l.token!;
    expect(token).toMatch(/^[0-9a-f]{64}$/);
    const tokenFile = join(stateDir, "listen", `${LABEL}.token`);
    expect(readFileSync(tokenFile, "utf8").trim()).toBe(token);

    // the agent: token on its command line and in its environment
    const client = spawn(NODE, ["--input-type=module", "-e", CLIENT, l.url, token], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, MCP_TOKEN: token },
    });
    let out = "";
    client.stdout!.setEncoding("utf8").on("data", (d: string) => {
      out += d;
    });
    // its stdout read to the end, not only its exit: the answers are the last thing it writes
    const done = exitWithOutput(client, [client.stdout!]);
    cleanup.push(async () => {
      if (client.exitCode === null) client.kill("SIGKILL");
      await done;
    });

    // a human looks at the request, every way it can be shown, then approves it
    const request = await nextStoredRequest(stateDir);
    const shown: [string, string][] = [];
    for (const args of [["approvals"], ["approvals", "--verbose"], ["approvals", "--json"]]) {
      const r = await runCli(args, { stateDir });
      expect(r.code, r.stderr).toBe(0);
      shown.push([args.join(" "), r.stdout + r.stderr]);
    }
    expect(shown[2]![1]).toContain(request.request);
    await decideByCli(stateDir, "approve", request.request, "--for", "session");
    await done;
    expect(out).toContain("Echo: first");
    expect(out).toContain("Echo: second");

    // status: the token is there (where it is documented) ...
    const status = await runCli(["status"], { stateDir });
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain(`Authorization: Bearer ${token}`);
    const statusJson = JSON.parse((await runCli(["status", "--json"], { stateDir })).stdout) as {
      listening: { token?: string; tokenFile?: string }[];
    };
    expect(statusJson.listening.map((x) => x.token)).toEqual([token]);
    // ... in its token field only
    for (const x of statusJson.listening) delete x.token;
    shown.push(["status --json (token field taken out)", JSON.stringify(statusJson)]);
    const statusLines = status.stdout
      .split("\n")
      .filter((line) => !line.includes(`Authorization: Bearer ${token}`));
    shown.push(["status, but its Authorization line", statusLines.join("\n")]);

    for (const args of [
      ["grants"],
      ["grants", "--json"],
      ["egress"],
      ["audit", "verify"],
      ["audit", "export"],
      ["audit", "checkpoint"],
    ]) {
      const r = await runCli(args, { stateDir });
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(0);
      shown.push([args.join(" "), r.stdout + r.stderr]);
    }
    const env = passphraseEnv();
    for (const args of [
      ["audit", "activity"],
      ["audit", "activity", "--json"],
      ["audit", "sessions"],
    ]) {
      const r = await runCli(args, { stateDir, env });
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(0);
      shown.push([args.join(" "), r.stdout + r.stderr]);
    }
    // every record of the chain, decrypted
    const events = await auditEvents(stateDir);
    expect(events.map((e) => e.type)).toEqual(
      expect.arrayContaining(["approval_requested", "approval_granted"]),
    );
    shown.push(["the decrypted audit events", JSON.stringify(events)]);

    // the state directory while the gateway still runs (its -wal holds what is not checkpointed yet)
    const running = filesUnder(stateDir)
      .filter((f) => f !== tokenFile && containsToken(readFileSync(f), token))
      .map((f) => relative(stateDir, f));
    expect(running).toEqual([]);

    await l.close();
    shown.push(["the gateway's stderr", l.stderr()]);
    for (const [what, text] of shown) expect(containsToken(text, token), `the token in ${what}`).toBe(false);

    // every file of the state directory, as bytes, but the token file
    const files = filesUnder(stateDir);
    expect(files).toContain(tokenFile);
    expect(files).toContain(join(stateDir, "portcullis.db"));
    const leaking = files
      .filter((f) => f !== tokenFile && containsToken(readFileSync(f), token))
      .map((f) => relative(stateDir, f));
    expect(leaking).toEqual([]);
  });
});
