// What a server, the agent or a watched file name chose never reaches the human's terminal raw:
// `audit activity`, `audit sessions` and `status` print tool names, labels and status lines
// through safeText, and `run --label` is held to the rule portcullis.json labels follow. Real
// gateways over pipes; the views are the built CLI's output. Plus a property over the renderers.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { renderTable } from "../../src/cli/audit.js";
import { renderGateway } from "../../src/cli/status.js";
import type { GatewayRow } from "../../src/gateway/registry.js";
import { waitForAuditEvent } from "../helpers/auditWait.js";
import { makeCatalog } from "../helpers/catalog.js";
import { tempDir, waitFor } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";
import { passphraseEnv } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** Cursor up, erase the line, back to column 0: what hides the row printed before. */
const HIDE = "\r\u001b[1A\u001b[2K";
/** The same without the carriage return, which the file watcher does not report in a name. */
const ERASE = "\u001b[1A\u001b[2K";
/** C0 and C1 control characters other than the newline a view writes itself. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are the subject
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

describe("views print what others chose as text, never as terminal commands", () => {
  it("a tool name from the agent (refused) and one from the server's catalog: audit activity, sessions and show", async () => {
    const serverTool = "list\u009b2Jitems"; // C1 CSI: JSON.stringify leaves it as it is
    const cat = makeCatalog([{ name: serverTool, description: "Lists.", inputSchema: { type: "object" } }]);
    const gw = await startGateway({
      args: ["--label", "shop", "--approval", "none", "--", ...fixtureCommand("catalog")],
      env: cat.env,
    });
    cleanup.push(
      () => gw.close(),
      () => cat.cleanup(),
    );
    await gw.client.listTools();
    await gw.client.callTool({ name: serverTool, arguments: {} });
    await expect(gw.client.callTool({ name: HIDE, arguments: {} })).rejects.toThrow();
    // the refusal's record is committed after the refusal was written: waited for before the views
    await waitForAuditEvent(
      gw.stateDir!,
      (e) => e.type === "authorization_denied" && e.tool === HIDE,
      "the refusal's authorization_denied",
    );
    const env = passphraseEnv();

    const activity = await runCli(["audit", "activity"], { stateDir: gw.stateDir, env });
    expect(activity.code).toBe(0);
    expect(activity.stdout).not.toMatch(CONTROL);
    expect(activity.stdout).toContain("\\u000d\\u001b[1A\\u001b[2K");
    expect(activity.stdout).toContain("list\\u009b2Jitems");

    const sessions = await runCli(["audit", "sessions"], { stateDir: gw.stateDir, env });
    expect(sessions.code).toBe(0);
    expect(sessions.stdout).not.toMatch(CONTROL);

    // every record, decrypted one at a time: the call and the refusal name the tools escaped
    const head = JSON.parse((await runCli(["audit", "checkpoint"], { stateDir: gw.stateDir })).stdout) as {
      seq: number;
    };
    let shown = "";
    for (let seq = 1; seq <= head.seq; seq++) {
      const one = await runCli(["audit", "show", String(seq)], { stateDir: gw.stateDir, env });
      expect(one.code, one.stderr).toBe(0);
      expect(one.stdout, `audit show ${seq}`).not.toMatch(CONTROL);
      shown += one.stdout;
    }
    expect(shown).toContain("list\\u009b2Jitems");
    expect(shown).toContain("\\u001b[1A\\u001b[2K");

    // --json stays exact: the names as they were sent, escaped in the JSON, the C1 CSI included
    // (JSON.stringify leaves U+0080-U+009F raw; printableJson writes them as \u escapes)
    const json = await runCli(["audit", "activity", "--json"], { stateDir: gw.stateDir, env });
    expect(json.stdout).not.toMatch(CONTROL);
    const tools = (JSON.parse(json.stdout) as { tool: string | null }[]).map((a) => a.tool);
    expect(tools).toEqual(expect.arrayContaining([serverTool, HIDE]));
  });

  it("a watched file's name in a status line: status", async () => {
    const watched = tempDir("portcullis-watched-");
    writeFileSync(join(watched, "a.txt"), "1");
    const gw = await startGateway({
      args: [
        "--label",
        "echo",
        "--approval",
        "none",
        "--watch",
        `${watched}/**`,
        "--",
        ...fixtureCommand("echo"),
      ],
    });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    // Written again until the gateway reports it: a change made before its watcher is ready
    // is part of the baseline, and nothing here waits for that by time.
    let n = 0;
    const status = await waitFor(async () => {
      writeFileSync(join(watched, `x${ERASE}y.txt`), String(++n));
      await gw.client.callTool({ name: "echo", arguments: { message: "x" } });
      const r = await runCli(["status"], { stateDir: gw.stateDir });
      return r.stdout.includes("y.txt") ? r : null;
    }, 20_000);
    expect(status.code).toBe(0);
    expect(status.stdout).not.toMatch(CONTROL);
    expect(status.stdout).toContain("x\\u001b[1A\\u001b[2Ky.txt");
  });

  it("run --label with control characters is a usage error naming --label, before anything starts", async () => {
    const stateDir = tempDir();
    const r = await runCli(
      ["run", "--label", `lbl\u001b]0;pwned\u0007${HIDE}`, "--", ...fixtureCommand("echo")],
      {
        stateDir,
      },
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^portcullis run: --label must be a plain label/);
    expect(r.stderr).not.toMatch(CONTROL);
    for (const bad of ["", "-x", "a b", "a".repeat(65), "ünï"]) {
      const again = await runCli(["run", `--label=${bad}`, "--", ...fixtureCommand("echo")], { stateDir });
      expect(again.code).toBe(2);
      expect(again.stderr).toContain("--label");
    }
  });

  it("a key of portcullis.json or of a host file, quoted by a refusal or by wrap's report, is escaped", async () => {
    const dir = tempDir();
    const stateDir = tempDir();
    const key = `x\u001b]0;pwned\u0007${HIDE}\u202e`;
    const shown = "x\\u001b]0;pwned\\u0007\\u000d\\u001b[1A\\u001b[2K\\u202e";
    const config = join(dir, "portcullis.json");
    writeFileSync(
      config,
      JSON.stringify({ servers: { a: { command: "node", approval: { tools: { [key]: "later" } } } } }),
    );
    const run = await runCli(["run", "a"], { cwd: dir, stateDir });
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      // quoted in brackets by the configuration's own path (JSON's \r for the carriage return)
      `portcullis run: ${config}: servers.a.approval.tools["x\\u001b]0;pwned\\u0007\\r\\u001b[1A\\u001b[2K\\u202e"] must be one of session, per-call, none.\n`,
    );

    const host = join(dir, "mcp.json");
    writeFileSync(
      host,
      JSON.stringify({ mcpServers: { [key]: { command: "node" }, [`${key}2`]: { url: "x" } } }),
    );
    const wrap = await runCli(["wrap", host, "--dry-run", "--state-dir", stateDir], { cwd: dir });
    expect(wrap.code, wrap.stderr).toBe(0);
    // a key that needs an escape is named quoted (as an empty one or one with a comma is)
    expect(wrap.stdout).toContain(`${host}: would wrap "${shown}"\n`);
    expect(wrap.stdout).toContain(`  left alone: "${shown}2" (an HTTP entry (url)`);
    expect(wrap.stdout).not.toMatch(CONTROL);
    writeFileSync(host, JSON.stringify({ mcpServers: { [key]: { command: "node", args: [1] } } }));
    const refused = await runCli(["wrap", host, "--dry-run", "--state-dir", stateDir], { cwd: dir });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(new RegExp(`^portcullis wrap: ${host}: server "x\\\\u001b`));
    expect(refused.stderr).not.toMatch(CONTROL);
  });
});

describe("the gateway's log quotes what a server said as text", () => {
  it("a tools/list error message with ESC, CR and a newline: no control reaches stderr, no line is forged", async () => {
    const said = `boom\u001b[2J\u001b[H\rportcullis[raw]: approved by a human\nportcullis[raw]: forged\u009b31m`;
    const gw = rawGateway({
      args: ["--label", "raw", "--approval", "none", "--", ...fixtureCommand("rawlines")],
      env: { FIXTURE_RAW_LIST_ERROR: said },
    });
    cleanup.push(() => gw.close());
    await gw.initialize();
    const list = await gw.request("tools/list");
    const data = list.error?.data as Record<string, unknown> | undefined;
    expect(data?.error).toBe("catalog_unavailable");
    // the client gets the server's words as a JSON string (escaped there)…
    expect(data?.catalogError).toContain(said);
    await waitFor(() => /cannot fetch the tool catalog/.test(gw.stderr()) || undefined, 10_000);
    // …and the log gets them as visible escapes, on the gateway's one line
    const err = gw.stderr();
    expect(err).not.toMatch(CONTROL);
    expect(err).toContain(
      "boom\\u001b[2J\\u001b[H\\u000dportcullis[raw]: approved by a human\\u000aportcullis[raw]: forged\\u009b31m",
    );
    expect(err.split("\n").filter((l) => l.startsWith("portcullis[raw]: forged"))).toEqual([]);
  });
});

describe("the renderers, whatever the text", () => {
  const text = fc.string({ unit: "binary", maxLength: 24 });

  it("the activity table has no control character but its own newlines", () => {
    fc.assert(
      fc.property(fc.array(fc.array(text, { minLength: 10, maxLength: 10 }), { maxLength: 4 }), (rows) => {
        const head = [
          "TIME",
          "RUN",
          "SERVER",
          "TOOL",
          "EPOCH",
          "REV",
          "GRANT",
          "DECISION",
          "OUTCOME",
          "CREDENTIALS",
        ];
        const out = renderTable(head, rows);
        expect(out).not.toMatch(CONTROL);
        expect(out.split("\n")).toHaveLength(Math.max(rows.length + 1, 1) + 1);
      }),
    );
  });

  it("a gateway in status has no control character but its own newlines", () => {
    fc.assert(
      fc.property(text, text, fc.array(text, { maxLength: 5 }), (label, state, lines) => {
        const row: GatewayRow & { heldInEnvironment: null } = {
          gatewayId: "G",
          pid: 1,
          serverLabel: label,
          startedAt: "2026-01-01T00:00:00.000Z",
          heartbeatAt: "2026-01-01T00:00:00.000Z",
          state,
          paused: null,
          epoch: null,
          epochReason: null,
          record: null,
          status: lines.map((line) => ({ at: "2026-01-01T00:00:00.000Z", line })),
          endedAt: null,
          running: true,
          liveness: "alive",
          unseen: null,
          schemaVersion: null,
          heldInEnvironment: null,
        };
        const out = renderGateway(row);
        expect(out).not.toMatch(CONTROL);
        expect(out.split("\n")).toHaveLength(1 + lines.length + 1);
      }),
    );
  });
});
