import { safeText } from "../catalog/text.js";
import { listGateways } from "../gateway/registry.js";
import { openStore } from "../store/db.js";
import { existingStateDir } from "../store/stateDir.js";
import { displayCommand } from "../util/redact.js";
import { parse } from "./args.js";

export const STATUS_HELP = `usage: portcullis status [--json] [--all] [--state-dir DIR]

Every running gateway: its server label, state, execution epoch, execution record and status lines.
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
  const store = openStore(existingStateDir(values["state-dir"]));
  try {
    const rows = listGateways(store, { all: values.all });
    if (values.json) {
      process.stdout.write(`${JSON.stringify({ gateways: rows }, null, 2)}\n`);
      return 0;
    }
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
      for (const s of g.status.slice(-5)) process.stdout.write(`  ${s.at}  ${s.line}\n`);
    }
    return 0;
  } finally {
    store.close();
  }
}
