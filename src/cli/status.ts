import { safeText } from "../catalog/text.js";
import { listGateways } from "../gateway/registry.js";
import { processStartTime } from "../identity/index.js";
import { openStore } from "../store/db.js";
import { existingStateDir } from "../store/stateDir.js";
import { type ListenInfo, readListenInfos, readTokenFile } from "../transport/httpInfo.js";
import { displayCommand } from "../util/redact.js";
import { parseEnvHeldLine } from "../vault/delivery.js";
import { parse } from "./args.js";

export const STATUS_HELP = `usage: portcullis status [--json] [--all] [--state-dir DIR]

Every running gateway: its server label, state, execution epoch, execution record and status lines.
Every HTTP front (run --listen): its URL, and the bearer token clients must send (a local
credential of yours: it is shown here and kept in its 0600 file, never logged).
  --all    also gateways that have ended`;

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
  const store = openStore(stateDir);
  try {
    const rows = listGateways(store, { all: values.all }).map((g) => ({
      ...g,
      // only a running server holds anything
      heldInEnvironment: g.running ? envHeld(g.status, g.epoch ?? g.record?.epoch ?? null) : null,
    }));
    const listening = readListenInfos(stateDir)
      .filter((l) => processStartTime(l.pid) !== null)
      .map((l) => ({ ...l, token: l.tokenFile ? readTokenFile(l.tokenFile) : null }));
    if (values.json) {
      process.stdout.write(`${JSON.stringify({ gateways: rows, listening }, null, 2)}\n`);
      return 0;
    }
    for (const l of listening) writeListening(l);
    if (rows.length === 0) {
      process.stdout.write(values.all ? "no gateways recorded\n" : "no gateway is running\n");
      return 0;
    }
    for (const g of rows) {
      const r = g.record;
      process.stdout.write(`${g.serverLabel}  ${g.state}  gateway pid ${g.pid}  since ${g.startedAt}\n`);
      if (r?.remote) {
        const x = r.remote;
        process.stdout.write(`  epoch      ${r.epoch}  (remote, since ${r.startedAt})\n`);
        process.stdout.write(`  url        ${safeText(x.url)}\n`);
        process.stdout.write(
          `  tls chain  ${x.certificateChainSha256 ?? "none (http://: nothing tells one server at this address from another)"}\n`,
        );
        if (x.certificate)
          process.stdout.write(
            `  cert       ${safeText(x.certificate.subject)}, until ${x.certificate.validTo}\n`,
          );
        process.stdout.write(
          `  server     ${x.serverInfo ? safeText(JSON.stringify(x.serverInfo)) : "(not initialized yet)"}${x.protocolVersion ? `  protocol ${safeText(x.protocolVersion)}` : ""}\n`,
        );
        if (x.headerNames.length)
          process.stdout.write(`  headers    ${x.headerNames.join(", ")} (values not shown)\n`);
        process.stdout.write(`  identity   ${r.identityDigest}\n`);
      } else if (r) {
        process.stdout.write(
          `  epoch      ${r.epoch}  (server pid ${r.processId}, started ${r.startedAt})\n`,
        );
        process.stdout.write(`  command    ${displayCommand(r.launchCommand)}\n`);
        if (r.entry)
          process.stdout.write(`  entry      ${r.entry.path}  sha256:${r.entry.sha256.slice(0, 16)}…\n`);
        if (r.dependencyTree) {
          process.stdout.write(
            `  deps       ${r.dependencyTree.root} (${r.dependencyTree.files} files) sha256:${r.dependencyTree.sha256.slice(0, 16)}…\n`,
          );
        }
        process.stdout.write(`  identity   ${r.identityDigest}\n`);
      }
      if (g.heldInEnvironment) {
        process.stdout.write(
          `  credentials ${g.heldInEnvironment.scopes.join(", ")}: in the server's environment, held by the server process for its whole life (any process of this user can read it; 'portcullis lock' does not take it back, a restart while locked does)\n`,
        );
      }
      for (const s of g.status.slice(-5)) process.stdout.write(`  ${s.at}  ${s.line}\n`);
    }
    return 0;
  } finally {
    store.close();
  }
}

function writeListening(l: ListenInfo & { token: string | null }): void {
  process.stdout.write(`${l.label}  listening on ${l.url}  gateway pid ${l.pid}  since ${l.startedAt}\n`);
  if (l.auth === "none") {
    process.stdout.write("  auth       none (--no-auth, loopback only)\n");
    return;
  }
  process.stdout.write(`  token file ${l.tokenFile}\n`);
  process.stdout.write(`  header     Authorization: Bearer ${l.token ?? "(token file not readable)"}\n`);
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
