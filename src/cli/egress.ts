import { safeText } from "../catalog/text.js";
import { openStoreToRead, type Store } from "../store/db.js";
import { existingStateDir } from "../store/stateDir.js";
import { printableJson } from "../util/printableJson.js";
import { type DestinationRow, listDestinations } from "../vault/egress/record.js";
import { labelArgument, parse } from "./args.js";
import { EXIT_OK, UsageError } from "./errors.js";
import { sayReadWithoutWriting } from "./readWithoutWriting.js";
import { NOT_REPEATED, namesHere } from "./unnamed.js";

export const EGRESS_HELP = `usage: portcullis egress [LABEL] [--json] [--state-dir DIR]

Every destination the servers' egress proxies saw, per server and execution epoch: host, port,
scheme (http/https: read by the proxy; tunnel: passed through unread), method, how many requests,
how many carried a released credential (and which scopes), how many were refused. Read from a
plain index table in the store: no passphrase, and nothing secret in it. Only a server run from
portcullis.json whose entry has credentials delivered over HTTP, or "egress", has a proxy; one run
as 'run -- COMMAND' (as wrap writes host entries) never has one.

A LABEL no server has run under in this state directory is refused (exit 2); one that ran and
contacted nothing is "no egress recorded", exit 0.
  --json   the same as one JSON object on standard output, {"epochs": [...]} (an empty list when
           nothing was recorded); errors stay one sentence on standard error, with the same exit
           codes`;

/**
 * Why a server has no egress to show. Only a server read from portcullis.json (`run LABEL`) can
 * have a proxy: a server given on run's command line (`run -- COMMAND`, as wrap writes host
 * entries) is never given one, and no run flag asks for one, so the way to it is said too.
 * The store does not keep where a server's configuration came from, so this says both cases.
 */
const NO_PROXY_WHY =
  `an egress proxy runs only for a server run from portcullis.json ('portcullis run LABEL') whose entry has credentials delivered over HTTP, or "egress"; ` +
  `one run from the command line ('portcullis run -- COMMAND', as wrap writes host entries) never has one, and no run flag gives it one: ` +
  `to record its egress, move it into portcullis.json with "egress": "record" (or its "credentials") and run it by its label`;

const OPTIONS = {
  json: { type: "boolean" },
  "state-dir": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

/** Whether a gateway ever ran a server under `label` with this store (a row of it is kept). */
/** Every label a server has run under here, sorted. */
function labelsThatRan(store: Store): string[] {
  return store
    .prepare(
      `SELECT server_label FROM gateways UNION SELECT server_label FROM epochs
       UNION SELECT server_label FROM catalog_revisions ORDER BY 1`,
    )
    .pluck()
    .all() as string[];
}

function serverHasRun(store: Store, label: string): boolean {
  return (
    store
      .prepare(
        `SELECT 1 FROM gateways WHERE server_label = @label
         UNION ALL SELECT 1 FROM epochs WHERE server_label = @label
         UNION ALL SELECT 1 FROM catalog_revisions WHERE server_label = @label LIMIT 1`,
      )
      .get({ label }) !== undefined
  );
}

interface EpochGroup {
  serverLabel: string;
  epoch: string | null;
  firstAt: string;
  destinations: Omit<DestinationRow, "serverLabel" | "epoch">[];
}

export async function egressCommand(args: string[]): Promise<number> {
  const { values, positionals } = parse("egress", args, OPTIONS);
  if (values.help) {
    process.stdout.write(`${EGRESS_HELP}\n`);
    return EXIT_OK;
  }
  if (positionals.length > 1)
    throw new UsageError(`egress: give at most one server LABEL (got ${positionals.length}).`);
  const label = positionals[0] === undefined ? undefined : labelArgument("egress", positionals[0]);
  const stateDir = existingStateDir(values["state-dir"]);
  // only reads: a store on a full disk, or under a file size limit, is read all the same, saying so
  const store = openStoreToRead(stateDir);
  sayReadWithoutWriting(store, "egress");
  let rows: DestinationRow[];
  try {
    rows = listDestinations(store, label);
    // as catalog: a label no server ran under here is a mistake (a typo, another state
    // directory), not a server that contacted nothing
    if (label !== undefined && rows.length === 0 && !serverHasRun(store, label))
      throw new UsageError(
        `egress: no server has run under that label in this state directory (${NOT_REPEATED}); ${namesHere("labels that have run", labelsThatRan(store), "none has run yet")}.`,
      );
  } finally {
    store.close();
  }
  const groups: EpochGroup[] = [];
  const byKey = new Map<string, EpochGroup>();
  for (const { serverLabel, epoch, ...d } of rows) {
    const key = `${serverLabel}\n${epoch}`;
    let g = byKey.get(key);
    if (!g) {
      g = { serverLabel, epoch: epoch === "" ? null : epoch, firstAt: d.firstAt, destinations: [] };
      byKey.set(key, g);
      groups.push(g);
    }
    g.destinations.push(d);
  }
  if (values.json) {
    process.stdout.write(`${printableJson({ epochs: groups })}\n`);
    return EXIT_OK;
  }
  if (groups.length === 0) {
    process.stdout.write(`no egress recorded${label ? ` for ${safeText(label)}` : ""} (${NO_PROXY_WHY})\n`);
    return EXIT_OK;
  }
  // Hosts and methods are what a server sent out: terminal-safe before they are printed.
  const t = (v: unknown) => safeText(String(v));
  for (const g of groups) {
    process.stdout.write(`${t(g.serverLabel)}  epoch ${t(g.epoch ?? "(none yet)")}  since ${t(g.firstAt)}\n`);
    for (const d of g.destinations) {
      const notes = [
        `${d.requests} request${d.requests === 1 ? "" : "s"}`,
        d.released ? `${d.released} with ${d.scopes.map(t).join(", ")} released` : "",
        d.refused ? `${d.refused} refused` : "",
      ].filter(Boolean);
      const at = d.host.includes(":") ? `[${t(d.host)}]:${t(d.port)}` : `${t(d.host)}:${t(d.port)}`;
      process.stdout.write(
        `  ${t(d.scheme).padEnd(6)} ${t(d.method).padEnd(7)} ${at}  ${notes.join(", ")}\n`,
      );
    }
  }
  return EXIT_OK;
}
