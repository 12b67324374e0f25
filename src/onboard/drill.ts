import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  type ApprovalRequest,
  type Decision,
  decideRequest,
  pendingRequests,
  pinnedSigner,
} from "../approval/index.js";
import { activityView, openRecords, verifyStore } from "../audit/index.js";
import { displayName, safeText } from "../catalog/text.js";
import { NO_CONSOLE_ENV } from "../console/launch.js";
import { currentEpoch, gatewayRunning, text, waitFor as waitUntil } from "../demo/observe.js";
import { REFUSAL_CODES } from "../guard/refusals.js";
import { initKeyring, unlockKeyring } from "../keyring/keyring.js";
import { openStore, type Store } from "../store/db.js";
import { sameJson } from "../util/canonical.js";
import { counted } from "../util/counted.js";
import { cutText } from "../util/cut.js";
import { envMs } from "../util/envMs.js";
import { drillRecord, entryPath, type SeenServer, seenServer, signalServerGroup } from "./drillRecord.js";
import type { DrillServer } from "./drillServer.js";

export interface DrillOptions {
  /** the server, as findDrillServer resolved it */
  server: DrillServer;
  passphrase: string;
  rebuild?: string;
  tool?: string;
  args?: Record<string, unknown>;
  /** how long to wait for the gateway, an epoch, a list, a call (default PORTCULLIS_DRILL_WAIT_MS, else 30 s) */
  waitMs?: number;
  say: (line: string) => void;
}

export interface StepResult {
  step: string;
  status: "passed" | "failed" | "skipped" | "not run";
  evidence: string;
}

const STEPS = [
  "start revision A and capture its execution record",
  "list the tools",
  "call the tool once and approve it",
  "rebuild and see a new execution epoch",
  "the call prepared before the rebuild does not run on the old approval",
  "re-list, approve again, call again",
  "the audit log shows both epochs",
] as const;

const STALE = REFUSAL_CODES.authorization_stale;
const DENIED = REFUSAL_CODES.approval_denied;
const CATALOG_STALE = REFUSAL_CODES.catalog_stale;

/** The gateway's command line for the server, with the drill's throwaway state directory. */
function launch(
  server: DrillServer,
  stateDir: string,
): { args: string[]; cwd: string; env: Record<string, string>; buildCwd: string } {
  const base = ["run", "--state-dir", stateDir, "--on-change", "restart"];
  const how = server.launch;
  if ("config" in how)
    return {
      args: [...base, "--config", how.config, server.label],
      cwd: dirname(how.config),
      env: {},
      buildCwd: dirname(how.config),
    };
  return {
    args: [...base, "--label", server.label, "--", ...how.command],
    cwd: how.cwd,
    env: how.env,
    buildCwd: how.buildCwd ?? how.cwd,
  };
}

/** The step could not go on because the gateway is gone (it exited, or failed and was ended). */
class GatewayEnded extends Error {
  override name = "GatewayEnded";
}

/** waitFor, failing at once once the gateway is gone (GatewayEnded). */
type Wait = <T>(check: () => T | null | undefined | false, what: string, within: number) => Promise<T>;

/** How many of the gateway's last stderr lines a failed step shows. */
const STDERR_TAIL = 15;

/**
 * The rebuild drill against the user's own server, in a throwaway state directory: each step
 * passed or failed with its evidence. Never calls a tool the user did not name.
 */
export async function drill(o: DrillOptions): Promise<StepResult[]> {
  const results: StepResult[] = STEPS.map((step) => ({ step, status: "not run", evidence: "" }));
  const root = mkdtempSync(join(tmpdir(), "portcullis-drill-"));
  const stateDir = join(root, "state");
  // a server that takes long to start (or a test that expects no epoch) may want another bound
  const ms = o.waitMs ?? envMs("PORTCULLIS_DRILL_WAIT_MS", 30_000);
  let client: Client | null = null;
  let db: Store | null = null;
  let at = 0;
  const gateway = {
    /** why the gateway is gone, once it is: every wait and request then fails the step at once */
    ended: null as string | null,
    /** the drill ends the gateway itself in step 7: that close is not a failure */
    closing: false,
    /** its last stderr lines, and the line it is still writing */
    stderr: [] as string[],
    partial: "",
  };
  const pass = (evidence: string) => {
    results[at] = { step: STEPS[at]!, status: "passed", evidence };
    o.say(`✓ ${at + 1}. ${STEPS[at]}: ${evidence}`);
    at++;
  };
  const skip = (evidence: string) => {
    results[at] = { step: STEPS[at]!, status: "skipped", evidence };
    o.say(`- ${at + 1}. ${STEPS[at]}: skipped (${evidence})`);
    at++;
  };
  const waitFor: Wait = (check, what, within) =>
    waitUntil(
      () => {
        if (gateway.ended) throw new GatewayEnded(gateway.ended);
        return check();
      },
      what,
      within,
    );
  const others = o.server.others.length
    ? `; also defined in ${o.server.others.join(", ")} (--file PATH drills another)`
    : "";
  const note = "note" in o.server.launch && o.server.launch.note ? `; ${o.server.launch.note}` : "";
  o.say(`    server "${o.server.label}" from ${o.server.file}${note}${others}`);
  try {
    await initKeyring(stateDir, o.passphrase);
    const how = launch(o.server, stateDir);
    const cli = fileURLToPath(new URL("../cli/main.cjs", import.meta.url));
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [cli, ...how.args],
      cwd: how.cwd,
      // the drill decides its own requests: a console started on demand for its throwaway state
      // directory would serve nobody, and outlive the drill
      env: { ...getDefaultEnvironment(), ...how.env, [NO_CONSOLE_ENV]: "1" },
      stderr: "pipe",
    });
    transport.stderr?.on("data", (b: Buffer) => {
      const got = (gateway.partial + b.toString("utf8")).split("\n");
      gateway.partial = got.pop() ?? "";
      for (const line of got.filter(Boolean)) {
        gateway.stderr.push(line);
        // "portcullis run: …" (or "portcullis: …") without a [label] is the CLI's last word when a
        // command fails (exit 2, one sentence): the gateway will serve nothing, so the step fails
        // now, not at a timeout
        if (/^portcullis(?: run)?: /.test(line) && !gateway.ended && !gateway.closing) {
          gateway.ended = "the gateway failed";
          void transport.close().catch(() => {});
        }
      }
      gateway.stderr.splice(0, Math.max(0, gateway.stderr.length - STDERR_TAIL));
    });
    client = new Client({ name: "portcullis-drill", version: "1.0.0" }, { capabilities: {} });
    client.onclose = () => {
      if (!gateway.closing) gateway.ended ??= "the gateway exited";
    };
    await client.connect(transport, { timeout: ms });
    db = openStore(stateDir);
    const store = db;
    const epochA = await waitFor(() => currentEpoch(store), "the first execution epoch", ms);
    // read as any row of the store another process can write (drillRecord.ts)
    const recordA = drillRecord(store, epochA);
    // the process the record names, read now (its parent and start time): what the restart signals
    const serverA = seenServer(recordA);
    pass(`epoch ${epochA}, server pid ${recordA.processId}, entry ${entryPath(recordA) ?? "(none found)"}`);

    const listed = await client.listTools();
    const names = listed.tools.map((t) => t.name);
    if (o.tool && !names.includes(o.tool))
      throw new Error(`the server lists no tool "${o.tool}" (it lists ${names.map(displayName).join(", ")})`);
    pass(`${counted(names.length, "tool")}${toolList(names)}`);

    const schemaA = listed.tools.find((t) => t.name === o.tool)?.inputSchema;
    /**
     * Step 3 and 6: call --tool, approve the request it waits on, return its result. A tool in
     * per-call mode is approved for this call only (the gateway takes no session approval for it).
     */
    const call = async (schemaChanged = false) => {
      const inFlight = startCall(client!, o.tool!, o.args ?? {});
      const first = await requestOrAnswer(store, inFlight, o.tool!, waitFor, ms);
      if ("answer" in first) throw new Error(answeredWithoutApproval(first.answer, o.tool!, schemaChanged));
      const req = first.request;
      await decide(req, { approve: true, for: req.mode === "per-call" ? "call" : "session" });
      const answer = await inFlight.answer;
      if ("error" in answer) throw new Error(`approved, then refused: ${refusalText(answer.error)}`);
      return { request: req.request, mode: req.mode, result: text(answer.result) };
    };
    /** Signed with the throwaway keyring's approver key, as a human's decision would be. */
    const decide = async (req: ApprovalRequest, decision: Decision) =>
      decideRequest(
        store,
        req.request,
        decision,
        "portcullis drill (passphrase given)",
        await pinnedSigner(store, stateDir, o.passphrase),
        stateDir,
      );
    const approvedFor = (mode: "session" | "per-call") =>
      mode === "per-call" ? "for this call only (per-call tool)" : "for the session";
    let mode: "session" | "per-call" = "session";
    if (o.tool) {
      const r = await call();
      mode = r.mode;
      pass(`request ${r.request} approved ${approvedFor(r.mode)}; result: ${cutText(r.result, 120)}`);
    } else skip("no --tool named: the drill calls only a tool you name");

    const newEpoch = (within: number) =>
      waitFor(
        () => {
          const e = currentEpoch(store);
          return e && e !== epochA ? e : null;
        },
        "a new execution epoch",
        within,
      );
    let epochB: string;
    if (o.rebuild) {
      const r = spawnSync(o.rebuild, { shell: true, cwd: how.buildCwd, encoding: "utf8" });
      if (r.status !== 0) {
        // a build ended by a signal has no status ("exited null"), and one that said nothing on
        // stderr left the sentence ending on a colon
        const ended =
          r.status !== null
            ? `exited ${r.status}`
            : r.signal
              ? `was ended by ${r.signal}`
              : `could not be started (${r.error?.message ?? "no reason given"})`;
        const said = cutText((r.stderr ?? "").trim(), 300);
        throw new Error(
          `--rebuild "${o.rebuild}" ${ended}${said ? `: ${said}` : " (and wrote nothing on stderr)"}`,
        );
      }
      try {
        epochB = await newEpoch(ms);
      } catch (e) {
        if (e instanceof GatewayEnded) throw e;
        throw new Error(
          `no new execution epoch within ${ms / 1000} s of the rebuild: nothing the execution record digests changed ("${o.rebuild}"), or a wrapper runs the real server out of the supervisor's sight (${entryPath(recordA) ?? "no entry"} is what it sees)`,
        );
      }
    } else {
      o.say(
        `    no --rebuild: restarting the server process (same code) to prove the epoch changes; give --rebuild CMD to run a real build`,
      );
      epochB = await restartServer(serverA, transport.pid, newEpoch, ms);
    }
    const factsB = epochFacts(store, epochB);
    const digestA = epochFacts(store, epochA)?.identity;
    const sameCode = factsB && digestA ? factsB.identity === digestA : null;
    const detail = [
      factsB?.reason,
      sameCode === null ? null : sameCode ? "same identity digest" : "identity digest changed",
    ]
      .filter(Boolean)
      .join(", ");
    pass(`epoch ${epochB} (was ${epochA}${detail ? `; ${detail}` : ""})`);

    if (o.tool) {
      const again = startCall(client, o.tool, o.args ?? {});
      const first = await requestOrAnswer(store, again, o.tool, waitFor, ms);
      if (mode === "session") pass(staleRefusal(first));
      else {
        // A per-call grant was one call in epoch A, consumed by it: nothing is left to be stale.
        // What must hold instead is that the same call in epoch B waits for a new human decision.
        if ("request" in first) {
          await decide(first.request, {
            approve: false,
            reason: "portcullis drill: step 5 only checks that a new approval is asked",
          });
        }
        pass(newApprovalAsked(first, await again.answer, epochA, epochB));
      }
      const relisted = await client.listTools();
      const schemaB = relisted.tools.find((t) => t.name === o.tool)?.inputSchema;
      const r = await call(!sameJson(schemaA ?? null, schemaB ?? null));
      pass(
        `re-listed; request ${r.request} approved ${approvedFor(r.mode)} in epoch ${epochB}; result: ${cutText(r.result, 120)}`,
      );
    } else {
      skip("no --tool named");
      skip("no --tool named");
    }

    gateway.closing = true;
    await client.close();
    client = null;
    await waitFor(() => !gatewayRunning(store), "the gateway to end", ms);
    const verified = verifyStore(store);
    if (!verified.ok) throw new Error(`audit chain broken at seq ${verified.seq}: ${verified.problem}`);
    const { auditPrivateKey } = await unlockKeyring(stateDir, o.passphrase);
    const activity = activityView(openRecords(store, auditPrivateKey));
    // A superseded intent is a decision taken again (the epoch's code changed or was being judged
    // before the forward), not a call: it is listed, not counted.
    const of = (e: string) => activity.filter((a) => a.epoch === e && a.outcome !== "superseded");
    for (const a of activity)
      o.say(
        `    ${a.tool ?? "?"}  epoch ${a.epoch ?? "-"}  grant ${a.grant ?? "-"}  ${a.decision} → ${a.outcome}`,
      );
    if (o.tool && (of(epochA).length === 0 || of(epochB).length === 0))
      throw new Error(
        `the audit log holds calls for epoch A: ${of(epochA).length}, epoch B: ${of(epochB).length}`,
      );
    pass(
      `chain verified (${verified.records} records); calls in epoch A: ${of(epochA).length}, in epoch B: ${of(epochB).length}`,
    );
  } catch (e) {
    const message = (e as Error).message;
    // a request the gateway's end cut short says only "Connection closed": say why first
    const { ended } = gateway;
    const evidence = ended && !(e instanceof GatewayEnded) ? `${ended} (${message})` : message;
    results[at] = { step: STEPS[at]!, status: "failed", evidence };
    o.say(`✗ ${at + 1}. ${STEPS[at]}: ${evidence}`);
    const tail = [...gateway.stderr, gateway.partial].filter(Boolean).slice(-STDERR_TAIL);
    if (tail.length > 0) {
      o.say("    the gateway's last stderr lines:");
      for (const line of tail) o.say(`    | ${cutText(safeText(line), 400)}`);
    }
  } finally {
    await client?.close().catch(() => {});
    db?.close();
    rmSync(root, { recursive: true, force: true });
  }
  return results;
}

/**
 * The default rebuild: end the server process and let the supervisor start it again. Every
 * spawn is a new execution epoch, so this proves the epoch (and the staleness of the old
 * grant) without touching the user's files; it does not prove that a build of theirs is seen.
 * SIGTERM goes to the server's process group (the supervisor starts each server as the leader
 * of its own group, so a wrapper's child goes too); SIGKILL only if it ignores SIGTERM.
 */
async function restartServer(
  server: SeenServer,
  /** the drill's gateway: only a process it started is signalled (signalServerGroup) */
  gatewayPid: number | null,
  newEpoch: (within: number) => Promise<string>,
  ms: number,
): Promise<string> {
  // "gone": its respawn is coming
  const signal = (sig: NodeJS.Signals) => void signalServerGroup(server, gatewayPid, sig);
  signal("SIGTERM");
  const grace = Math.min(5_000, ms);
  try {
    return await newEpoch(grace);
  } catch (e) {
    if (e instanceof GatewayEnded) throw e;
    signal("SIGKILL");
  }
  try {
    return await newEpoch(Math.max(ms - grace, 1_000));
  } catch (e) {
    if (e instanceof GatewayEnded) throw e;
    throw new Error(
      `no new execution epoch within ${ms / 1000} s of restarting the server process (pid ${server.pid}): the supervisor did not start it again (see the gateway's log)`,
    );
  }
}

/** The reason and identity digest the gateway recorded for an epoch. */
function epochFacts(db: Store, epoch: string): { reason: string; identity: string } | null {
  const row = db.prepare("SELECT reason, identity_digest FROM epochs WHERE epoch = ?").get(epoch) as
    | { reason: string; identity_digest: string }
    | undefined;
  return row ? { reason: row.reason, identity: row.identity_digest } : null;
}

/** How a tool call ended: the gateway's result, or the JSON-RPC error it answered with. */
type Answer = { result: unknown } | { error: { code?: number; message?: string; data?: unknown } };

/** A tool call in flight; `settled` is its answer once it came, null before. */
interface InFlight {
  answer: Promise<Answer>;
  settled: () => Answer | null;
}

function startCall(client: Client, tool: string, args: Record<string, unknown>): InFlight {
  let settled: Answer | null = null;
  const answer = client.callTool({ name: tool, arguments: args }).then(
    (result): Answer => (settled = { result }),
    (e: { code?: number; message?: string; data?: unknown }): Answer =>
      (settled = { error: { code: e?.code, message: e?.message, data: e?.data } }),
  );
  return { answer, settled: () => settled };
}

/**
 * Whichever comes first: a pending approval request for `tool` (the call waits on a human), or
 * the call's own answer. The gateway answers at once when it refuses the call or its arguments
 * without asking anyone (invalid arguments, vault_locked, catalog_stale, a tool that needs no
 * approval); waiting out `ms` for a request then would blame the wrong thing.
 */
async function requestOrAnswer(
  store: Store,
  inFlight: InFlight,
  tool: string,
  waitFor: Wait,
  ms: number,
): Promise<{ request: ApprovalRequest } | { answer: Answer }> {
  try {
    return await waitFor<{ request: ApprovalRequest } | { answer: Answer }>(
      () => {
        const answer = inFlight.settled();
        if (answer) return { answer };
        const request = pendingRequests(store).find((r) => r.tool === tool);
        return request ? { request } : null;
      },
      "the approval request",
      ms,
    );
  } catch (e) {
    if (e instanceof GatewayEnded) throw e;
    throw new Error(
      `timed out after ${ms / 1000} s: the call was neither answered nor held for an approval request`,
    );
  }
}

/** A refusal as the gateway gave it: code, name, sentence and what to do. */
/** Step 2's list after the count: ": a, b, …" (the first 12), nothing when the server lists none. */
function toolList(names: string[]): string {
  if (names.length === 0) return "";
  // as the review shows a name: bare when plain, else quoted with its escapes (a comma in a
  // name would otherwise read as two tools)
  return `: ${names.slice(0, 12).map(displayName).join(", ")}${names.length > 12 ? ", …" : ""}`;
}

function refusalText(e: { code?: number; message?: string; data?: unknown }): string {
  const data = (typeof e.data === "object" && e.data !== null ? e.data : {}) as {
    error?: unknown;
    retry?: unknown;
  };
  const message = (e.message ?? "").replace(/^MCP error -?\d+: /, "");
  const name = typeof data.error === "string" ? ` ${data.error}` : "";
  const retry = typeof data.retry === "string" ? ` (${data.retry})` : "";
  return `${e.code ?? "?"}${name}: ${message}${retry}`;
}

/**
 * Why the call was answered before any approval was asked, for the failing step. `schemaChanged`:
 * the tool's input schema is not the one listed before the rebuild (step 6).
 */
function answeredWithoutApproval(answer: Answer, tool: string, schemaChanged: boolean): string {
  if ("error" in answer) {
    return `the gateway refused the call before asking for approval: ${refusalText(answer.error)}`;
  }
  const said = oneLine(text(answer.result));
  if ((answer.result as { isError?: unknown }).isError === true) {
    return schemaChanged
      ? `--args no longer matches the rebuilt schema of ${tool} (its input schema changed in the rebuild); the gateway answered at once: ${said}`
      : `the gateway answered at once, before asking for approval: ${said}`;
  }
  return `the gateway ran the call without asking for approval: ${tool} needs none (approval mode "none"), so nothing can go stale; the drill needs a tool in approval mode "session" or "per-call" (name another --tool, or set one in portcullis.json: "approval": {"tools": {"${tool}": "session"}}); result: ${cutText(said, 120)}`;
}

/**
 * A server's text on one line, cut short: each run of white space that holds a line break becomes
 * one space, as `s.replace(/\s*\n\s*\/g, " ")` reads it. Not that regex: tried at each place of
 * a long run of spaces without a line break, its `\s*` read to the run's end and back again, in
 * time quadratic in the run (160,000 spaces: 16 s), and the text is the server's. A loop finds
 * each line break and the white space around it, in one pass; only the first 400 characters are kept.
 */
export function oneLine(s: string): string {
  let out = "";
  let done = 0;
  for (let nl = s.indexOf("\n"); nl >= 0 && out.length <= 400; nl = s.indexOf("\n", done)) {
    let start = nl;
    while (start > done && /\s/.test(s[start - 1]!)) start--;
    let end = nl + 1;
    while (end < s.length && /\s/.test(s[end]!)) end++;
    out += `${s.slice(done, start)} `;
    done = end;
  }
  return cutText(out + s.slice(done, done + 401), 400);
}

/**
 * Step 5 for a tool approved for the session: the call made again in the new epoch must be
 * refused as authorization_stale (the session grant belongs to epoch A). The evidence, or throws.
 */
function staleRefusal(first: { request: ApprovalRequest } | { answer: Answer }): string {
  if ("request" in first)
    throw new Error(
      `expected authorization_stale (${STALE}), but the call was held for a new approval request ${first.request.request} instead`,
    );
  const a = first.answer;
  if ("error" in a && a.error.code === STALE)
    return `authorization_stale checked: refused ${refusalText(a.error)}`;
  throw new Error(`expected authorization_stale (${STALE}), got ${answerText(a)}`);
}

/**
 * Step 5 for a per-call tool: its grant covered one call in epoch A and was consumed by it, so
 * the same call in the new epoch must wait for a new approval request of epoch B (the drill
 * denies it: it proves the asking, not the call). When the rebuild changed the tool, the gateway
 * refuses the call as catalog_stale before asking: not run either, and step 6 asks anew after
 * the re-list. `answer` is the call's answer once the drill has decided. The evidence, or throws.
 */
function newApprovalAsked(
  first: { request: ApprovalRequest } | { answer: Answer },
  answer: Answer,
  epochA: string,
  epochB: string,
): string {
  const checked = "per-call tool, so a new approval was checked (its grant covered one call in epoch A)";
  if ("answer" in first) {
    const a = first.answer;
    if ("error" in a && a.error.code === CATALOG_STALE)
      return `${checked}: the tool changed in the rebuild, so the call was refused before asking, ${refusalText(a.error)}; step 6 asks for the new approval after re-listing`;
    throw new Error(`expected a new approval request for epoch ${epochB}, got ${answerText(a)}`);
  }
  const req = first.request;
  if (req.executionEpoch !== epochB)
    throw new Error(
      `the call waits on approval request ${req.request} of epoch ${req.executionEpoch}, not of the new epoch ${epochB} (was ${epochA})`,
    );
  if (!("error" in answer) || answer.error.code !== DENIED)
    throw new Error(`approval request ${req.request} was denied, yet the call got ${answerText(answer)}`);
  return `${checked}: the same call in epoch ${epochB} waited on new approval request ${req.request}; denied by the drill, refused ${answer.error.code}`;
}

function answerText(a: Answer): string {
  return "error" in a ? `refused ${refusalText(a.error)}` : `a result: ${oneLine(text(a.result))}`;
}
