import { displayJson, safeText } from "../catalog/text.js";
import { epochBegan, type GatewayRow, listGateways } from "../gateway/registry.js";
import { type ExecutionRecord, processStartTime, writtenServerInfo } from "../identity/index.js";
import { notPortcullisPhrase, runsPortcullisCommand } from "../identity/proc.js";
import { openStoreToRead } from "../store/db.js";
import { KNOWN_SCHEMA_VERSION, olderThan, portcullisVersion, schemaPhrase } from "../store/schemaVersion.js";
import { existingStateDir, quotedCommand } from "../store/stateDir.js";
import { type ListenInfo, readListenInfos, readTokenFile } from "../transport/httpInfo.js";
import { printableJson } from "../util/printableJson.js";
import { displayCommand } from "../util/redact.js";
import { parseEnvHeldLine } from "../vault/delivery.js";
import { parse } from "./args.js";
import { sayReadWithoutWriting, storeWritability } from "./readWithoutWriting.js";

export const STATUS_HELP = `usage: portcullis status [--json] [--all] [--state-dir DIR]

Every running gateway: its server label, state, execution epoch, execution record and status lines.
Every HTTP front (run --listen): its URL, and the bearer token clients must send (a local
credential of yours: it is shown here and kept in its 0600 file, never logged).
A gateway an older portcullis started, still running after an upgrade, is said to be one, with
its store schema version (schemaVersion in --json; "unreadable", counted as older, when what it
recorded cannot be read): restart it to run this portcullis.
  --all    also gateways that have ended
  --json   the same as one JSON object on standard output: "gateways" (each with its epoch,
           execution record, status lines, liveness), "listening" (the HTTP fronts) and "store"
           (whether it can be written); errors stay one sentence on standard error, with the same
           exit codes`;

export async function statusCommand(args: string[]): Promise<number> {
  const { values } = parse(
    "status",
    args,
    {
      json: { type: "boolean" },
      all: { type: "boolean" },
      "state-dir": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    false,
  );
  if (values.help) {
    process.stdout.write(`${STATUS_HELP}\n`);
    return 0;
  }
  const stateDir = existingStateDir(values["state-dir"]);
  // only reads: a store on a full disk, or one this user may not write, is read all the same
  const store = openStoreToRead(stateDir);
  try {
    // one that cannot be written is read all the same, and said so: its rows may look healthy
    // while no gateway can write its audit records there (readWithoutWriting.ts)
    sayReadWithoutWriting(store, "status");
    const rows = listGateways(store, { all: values.all }).map((g) => ({
      ...g,
      // only a running server holds anything
      heldInEnvironment: g.running ? envHeld(g.status, g.epoch ?? g.record?.epoch ?? null) : null,
    }));
    // alive, and the same process: a front SIGKILLed leaves its file, and its pid may be another's
    const listening = readListenInfos(stateDir)
      .filter((l) => {
        const start = processStartTime(l.pid);
        return start !== null && (l.pidStart == null || l.pidStart === start);
      })
      .map((l) => ({ ...l, token: l.tokenFile ? readTokenFile(l.tokenFile) : null }));
    if (values.json) {
      process.stdout.write(
        `${printableJson({ gateways: rows, listening, store: storeWritability(store) })}\n`,
      );
      return 0;
    }
    for (const l of listening) writeListening(l);
    if (rows.length === 0) {
      process.stdout.write(
        values.all ? "no gateways recorded\n" : `no gateway is running${endedHint(store, stateDir)}\n`,
      );
      return 0;
    }
    for (const g of rows) process.stdout.write(renderGateway(g));
    return 0;
  } finally {
    store.close();
  }
}

/**
 * Where the gateways that ran here are, when none runs: a host that has not started its servers
 * yet, or one whose session ended, leaves "no gateway is running" alone, and the history of the
 * epochs, status lines and exits is one flag away.
 */
function endedHint(store: Parameters<typeof listGateways>[0], stateDir: string): string {
  const ended = listGateways(store, { all: true }).length;
  if (ended === 0) return "";
  return ` (${ended === 1 ? "1 has" : `${ended} have`} run here: ${quotedCommand("status --all", stateDir)} lists ${ended === 1 ? "it" : "them"})`;
}

/** A value for the terminal: labels, status lines and file names come from servers and watched files. */
const t = (v: unknown): string => safeText(String(v));

type StatusRow = GatewayRow & { heldInEnvironment: { scopes: string[] } | null };

/**
 * One gateway as `status` prints it. Status lines carry file names (`build complete: <file>
 * changed`) and server labels; the record carries paths and what a remote server said about
 * itself: every such value goes through safeText, so none can move the cursor or erase a line.
 */
export function renderGateway(g: StatusRow): string {
  const out: string[] = [];
  const w = (line: string) => out.push(`${line}\n`);
  const r = g.record;
  // "since" is a running gateway's: an ended one "ended … since START" read as ended since then
  const when = g.running
    ? `since ${t(g.startedAt)}`
    : `started ${t(g.startedAt)}${g.endedAt ? `, ended ${t(g.endedAt)}` : ""}`;
  w(`${t(g.serverLabel)}  ${t(g.state)}  gateway pid ${t(g.pid)}${unseenNote(g)}  ${when}`);
  // paused: no server runs until its files change; the epoch below is the last one, gone
  const paused = g.state === "paused";
  if (paused)
    w(`  paused     ${t(g.paused ?? "a crash loop; waiting for the next change of the server's files")}`);
  if (r?.remote) {
    const x = r.remote;
    w(`  epoch      ${t(r.epoch)}  (remote, since ${t(r.startedAt)})`);
    w(`  url        ${t(x.url)}`);
    w(
      `  tls chain  ${x.certificateChainSha256 ? t(x.certificateChainSha256) : "none (http://: nothing tells one server at this address from another)"}`,
    );
    if (x.certificate) w(`  cert       ${t(x.certificate.subject)}, until ${t(x.certificate.validTo)}`);
    w(
      `  server     ${x.serverInfo ? displayJson(writtenServerInfo(x) ?? "null", 300) : "(not initialized yet)"}${x.protocolVersion ? `  protocol ${t(x.protocolVersion)}` : ""}`,
    );
    if (x.headerNames.length) w(`  headers    ${x.headerNames.map(t).join(", ")} (values not shown)`);
    if (x.transport === "http+sse") w("  transport  the older HTTP+SSE transport (MCP 2024-11-05)");
    w(`  identity   ${t(r.identityDigest)}`);
  } else if (r) {
    w(`  epoch      ${t(r.epoch)}  (${epochSince(g, r, paused)})`);
    w(`  command    ${t(displayCommand(r.launchCommand))}`);
    // the same command in two projects (one label for both, as wrap gives it) is told apart by where it runs
    w(`  directory  ${t(r.workingDirectory)}`);
    if (r.entry) w(`  entry      ${t(r.entry.path)}  sha256:${t(r.entry.sha256.slice(0, 16))}…`);
    if (r.dependencyTree) {
      w(
        `  deps       ${t(r.dependencyTree.root)} (${t(r.dependencyTree.files)} files) sha256:${t(r.dependencyTree.sha256.slice(0, 16))}…`,
      );
    }
    w(`  identity   ${t(r.identityDigest)}`);
  }
  // still running from before an upgrade: it goes on as its version did until restarted
  // (a row names any pid its writer chose: one that is not a gateway is not to be restarted or ended)
  if (g.running && olderThan(g.schemaVersion, KNOWN_SCHEMA_VERSION))
    w(
      `  version    started by an older portcullis (${t(schemaPhrase(g.schemaVersion))}; this one, ${t(portcullisVersion())}, knows ${KNOWN_SCHEMA_VERSION}): ${
        runsPortcullisCommand(g.pid, "run")
          ? "restart it to run this one (restart the MCP client that started it)"
          : `its row's ${notPortcullisPhrase(g.pid, "gateway")}; restart the MCP client that started this gateway to run this one`
      }`,
    );
  if (g.unreadable)
    w(`  unreadable ${t(g.unreadable)}: something rewrote its row in the store; nothing is shown of it`);
  if (g.heldInEnvironment) {
    w(
      `  credentials ${g.heldInEnvironment.scopes.map(t).join(", ")}: in the server's environment, held by the server process for its whole life (any process of this user can read it; 'portcullis lock' does not take it back, a restart while locked does)`,
    );
  }
  for (const s of g.status.slice(-5)) w(`  ${t(s.at)}  ${t(s.line)}`);
  return out.join("");
}

/** When the epoch began and under which process; paused, only that its server is gone. */
function epochSince(g: StatusRow, r: ExecutionRecord, paused: boolean): string {
  if (paused) return `the last one; its server, pid ${t(r.processId)}, is gone`;
  return t(epochBegan(g.epochReason, r));
}

/**
 * A gateway this process cannot see: listed as running (its row has not ended), said so, since its
 * pid is not one of this namespace's processes (or where it runs was never recorded).
 */
function unseenNote(g: StatusRow): string {
  if (g.unseen === "another PID namespace") return " (in another PID namespace: not this one's pid)";
  if (g.unseen === "cannot tell")
    return " (cannot tell whether it runs: where it runs was not recorded, or could not be read)";
  return "";
}

function writeListening(l: ListenInfo & { token: string | null }): void {
  process.stdout.write(
    `${t(l.label)}  listening on ${t(l.url)}  gateway pid ${t(l.pid)}  since ${t(l.startedAt)}\n`,
  );
  if (l.auth === "none") {
    process.stdout.write("  auth       none (--no-auth, loopback only)\n");
    return;
  }
  process.stdout.write(`  token file ${t(l.tokenFile)}\n`);
  process.stdout.write(
    `  header     Authorization: Bearer ${l.token === null ? "(token file not readable)" : t(l.token)}\n`,
  );
}

/**
 * The env-delivered scopes the current epoch's server process holds, from the gateway's status
 * lines (written by `run` when it spawns the server with them; one format, src/vault/delivery.ts).
 */
function envHeld(
  lines: { at: string; line: string }[],
  epoch: string | null,
): { epoch: string; scopes: string[]; note: string } | null {
  if (!epoch) return null;
  for (let i = lines.length - 1; i >= 0; i--) {
    const held = parseEnvHeldLine(lines[i]!.line);
    if (held && held.epoch === epoch)
      return { ...held, note: "in the server's environment: held by the server process for its whole life" };
  }
  return null;
}
