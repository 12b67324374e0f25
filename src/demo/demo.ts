import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { decideRequest, pendingRequests, pinnedSigner, renderReview } from "../approval/index.js";
import { activityView, openRecords, verifyStore } from "../audit/index.js";
import { diffCatalogs, getRevision, latestRevision, renderDiff } from "../catalog/index.js";
import { clearConsoleAddress, requestPageUrl, writeConsoleAddress } from "../console/address.js";
import { NO_CONSOLE_ENV } from "../console/launch.js";
import { type RunningConsole, startConsole } from "../console/server.js";
import { initKeyring, unlockKeyring } from "../keyring/keyring.js";
import { openStore, type Store } from "../store/db.js";
import { stateDirFlagFor } from "../store/stateDir.js";
import { shellWord } from "../util/shellWord.js";
import { ConsoleClient } from "./consoleClient.js";
import { credentialStory } from "./credential.js";
import { currentEpoch, gatewayRunning, text, waitFor } from "./observe.js";
import { makeDemoProject } from "./project.js";

const LABEL = "inventory-demo";
// A throwaway passphrase for the demo's throwaway keyring. Real use types it on a terminal.
const DEMO_PASSPHRASE = "portcullis demo passphrase (not a secret)";
const DECIDED_BY = "demo (same code path as 'portcullis approve')";

const out = (s = "") => process.stdout.write(`${s}\n`);
const step = (n: number, title: string) => out(`\n── ${n}. ${title}`);
const note = (s: string) => out(`   ${s}`);
const indent = (text: string, pad = "   │ ") =>
  text
    .trimEnd()
    .split("\n")
    .map((l) => `${pad}${l}`)
    .join("\n");

/**
 * The story, its options already read (src/cli/demo.ts reads them before this module, and the SDK,
 * the console and the store it brings, are loaded: a refused option costs no such load).
 */
export async function runDemo(opts: { keep: boolean; withConsole: boolean }): Promise<number> {
  const { keep, withConsole } = opts;
  let console_: RunningConsole | null = null;
  const root = mkdtempSync(join(tmpdir(), "portcullis-demo-"));
  const stateDir = join(root, "state");
  mkdirSync(stateDir, { mode: 0o700 });
  let client: Client | null = null;
  let db: Store | null = null;
  try {
    out("portcullis demo — a rebuild under a running agent, told truthfully");
    note(`temporary state directory: ${stateDir}`);

    step(1, "A keyring for this demo");
    await initKeyring(stateDir, DEMO_PASSPHRASE);
    note("portcullis init: passphrase → scrypt → key-encryption key; audit key pair (public half in clear)");
    note("(the demo passes its passphrase in-process; a real install asks on the terminal)");
    let decider: ConsoleClient | null = null;
    if (withConsole) {
      console_ = await startConsole({
        stateDir,
        log: { info: () => {}, warn: (m) => note(`console: ${m}`) },
      });
      writeConsoleAddress(stateDir, console_.url, console_.ticket);
      note(`console: ${console_.url}  (log in with the demo passphrase: "${DEMO_PASSPHRASE}")`);
      decider = await ConsoleClient.login(console_.url, DEMO_PASSPHRASE);
      note("the demo's human is logged in there; each decision below is made through it");
    } else {
      // the command an installed portcullis has (`npm run demo` is a checkout's script, and passes
      // its arguments on after `--`: `npm run demo -- --console`), as 'portcullis demo --keep' is named
      note(
        "console: not started; 'portcullis demo --console' runs this story with it open at http://127.0.0.1:<port>",
      );
    }

    step(2, `Revision A of "${LABEL}" behind the gateway`);
    const project = makeDemoProject(join(root, "inventory"), "A");
    const cli = fileURLToPath(new URL("../cli/main.cjs", import.meta.url));
    const runArgs = [
      "run",
      "--state-dir",
      stateDir,
      "--label",
      LABEL,
      "--on-change",
      "restart",
      "--",
      process.execPath,
      "dist/server.js",
    ];
    note(
      `$ portcullis run${stateDirFlagFor(stateDir)} --label ${LABEL} --on-change restart -- node dist/server.js`,
    );
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [cli, ...runArgs],
      cwd: project.dir,
      // Without --console, the gateway starts no console on demand (the demo decides in-process).
      env: {
        ...getDefaultEnvironment(),
        DEMO_RECORD: project.recordFile,
        ...(withConsole ? {} : { [NO_CONSOLE_ENV]: "1" }),
      },
      stderr: "pipe",
    });
    const gatewayLines: string[] = [];
    let partial = "";
    transport.stderr?.on("data", (b: Buffer) => {
      partial += b.toString("utf8");
      let nl = partial.indexOf("\n");
      while (nl !== -1) {
        const line = partial.slice(0, nl);
        partial = partial.slice(nl + 1);
        gatewayLines.push(line);
        out(`   │ gateway ▸ ${line}`);
        nl = partial.indexOf("\n");
      }
    });
    client = new Client({ name: "demo-agent", version: "1.0.0" }, { capabilities: {} });
    await client.connect(transport);
    db = openStore(stateDir);
    const store = db;
    const epochA = await waitFor(() => currentEpoch(store), "the first epoch");
    note(`execution epoch A: ${epochA}`);
    let tools = await client.listTools();
    note(
      `tools/list → catalog revision ${latestRevision(store, LABEL)?.revision}: ${tools.tools.map((t) => t.name).join(", ")}`,
    );

    step(3, "The agent calls adjust_inventory: a human approves this run, this epoch, this tool");
    const first = client.callTool({ name: "adjust_inventory", arguments: { sku: "WIDGET-7", delta: 3 } });
    await approveNext(store, stateDir, decider);
    note(`result: ${text(await first)}`);

    step(4, "Rebuild to revision B: adjust_inventory gains a required `warehouse`");
    const mark = gatewayLines.length;
    project.rebuild("B");
    note(
      "dist/server.js rewritten (the build succeeded); the gateway restarts the worker (onChange: restart)",
    );
    await waitFor(
      () => gatewayLines.slice(mark).some((l) => /^portcullis\[[^\]]+\]: new execution epoch/.test(l)),
      "the new epoch",
    );
    const epochB = await waitFor(() => {
      const e = currentEpoch(store);
      return e && e !== epochA ? e : null;
    }, "epoch B in the store");
    note(`execution epoch B: ${epochB} (was ${epochA})`);

    step(5, "The call the agent prepared before the rebuild");
    note('tools/call adjust_inventory {"sku": "WIDGET-7", "delta": 1}  (built from revision A\'s schema)');
    const stale = await client
      .callTool({ name: "adjust_inventory", arguments: { sku: "WIDGET-7", delta: 1 } })
      .then(
        () => null,
        (e: { code?: number; message?: string; data?: unknown }) => e,
      );
    if (!stale || stale.code !== -32051)
      throw new Error(`expected authorization_stale, got ${JSON.stringify(stale)}`);
    note(`refused ${stale.code}: ${stale.message}`);
    out(indent(JSON.stringify(stale.data, null, 2)));

    step(6, "Re-list, approve anew (seeing what changed), call again");
    tools = await client.listTools();
    const latest = latestRevision(store, LABEL)!;
    const previous = getRevision(store, LABEL, latest.revision - 1);
    note(`tools/list → catalog revision ${latest.revision}: ${tools.tools.map((t) => t.name).join(", ")}`);
    if (previous)
      out(
        indent(
          renderDiff(diffCatalogs(previous.tools, latest.tools), {
            fromRevision: previous.revision,
            toRevision: latest.revision,
          }),
        ),
      );
    const second = client.callTool({
      name: "adjust_inventory",
      arguments: { sku: "WIDGET-7", delta: 1, warehouse: "north" },
    });
    await approveNext(store, stateDir, decider);
    note(`result: ${text(await second)}`);

    step(7, "What each revision received, and what the audit log says");
    for (const r of project.records())
      note(`server revision ${r.revision} (pid ${r.pid}) received ${r.tool} ${JSON.stringify(r.args)}`);
    await client.close();
    client = null;
    await waitFor(() => !gatewayRunning(store), "the gateway to end");
    const verified = verifyStore(store);
    if (!verified.ok) throw new Error(`audit chain broken at seq ${verified.seq}: ${verified.problem}`);
    note(
      `portcullis audit verify: ok — ${verified.records} records, head ${verified.head.hash.slice(0, 16)}… (no key needed)`,
    );
    const { auditPrivateKey } = await unlockKeyring(stateDir, DEMO_PASSPHRASE);
    const activity = activityView(openRecords(store, auditPrivateKey));
    note("portcullis audit activity (decrypted with the passphrase):");
    for (const a of activity) {
      note(
        `  ${a.tool ?? "?"}  epoch ${short(a.epoch)}  revision ${a.revision ?? "-"}  grant ${short(a.grant)}  ${a.decision} → ${a.outcome}`,
      );
    }
    out(
      "\nThe approval given to epoch A did not follow the tool name to epoch B; the audit log says which code acted.",
    );
    await credentialStory({ root, stateDir, keep, passphrase: DEMO_PASSPHRASE, out });
    return 0;
  } catch (e) {
    process.stderr.write(`portcullis demo: failed: ${(e as Error).message}\n`);
    return 1;
  } finally {
    await client?.close().catch(() => {});
    if (console_) {
      clearConsoleAddress(stateDir);
      await console_.close();
      out(`\n(the console at ${console_.url} is closed)`);
    }
    db?.close();
    if (keep) {
      out(`\n(kept: ${root})`);
      // the state directory is below it: `--state-dir ROOT` found no keyring and said to run
      // `portcullis init` there, which would set up a new, empty one beside the demo's
      out(
        `   its state directory is ${shellWord(stateDir)}, the passphrase "${DEMO_PASSPHRASE}"; to read its audit log, run: portcullis audit activity --state-dir ${shellWord(stateDir)}`,
      );
    } else rmSync(root, { recursive: true, force: true });
  }
}

/** Waits for the next approval request, shows it as `portcullis approvals` would, and approves it. */
async function approveNext(db: Store, stateDir: string, decider: ConsoleClient | null): Promise<void> {
  const req = await waitFor(() => pendingRequests(db)[0] ?? null, "an approval request");
  note(`the gateway holds the call and asks a human: approval request ${req.request}`);
  out(indent(renderReview(req)));
  if (decider) {
    // The console signs with the approver key it opened at login, through decideRequest.
    await decider.decide(req.request, "approve-session");
    note(`approved for the session in the console: ${requestPageUrl(decider.base, req.request)}`);
    return;
  }
  // Signed with the demo keyring's approver key, as the CLI signs after the passphrase.
  const signer = await pinnedSigner(db, stateDir, DEMO_PASSPHRASE);
  decideRequest(db, req.request, { approve: true, for: "session" }, DECIDED_BY, signer, stateDir);
  note(`approved for the session by ${DECIDED_BY}`);
}

function short(id: string | null | undefined): string {
  return id ? `${id.slice(0, 10)}…` : "-";
}
