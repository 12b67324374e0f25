import {
  diffCatalogs,
  getRevision,
  latestRevision,
  listRevisions,
  recordedLabels,
  renderCatalog,
  renderDiff,
  shownDiff,
  storedSnapshot,
} from "../catalog/index.js";
import { safeText } from "../catalog/text.js";
import { openStoreToRead } from "../store/db.js";
import { existingStateDir } from "../store/stateDir.js";
import { printableJson } from "../util/printableJson.js";
import { redactSchemaDefaults, redactText } from "../util/redact.js";
import { givenSubcommand, labelArgument, leadingZero, parse, unknownSubcommand } from "./args.js";
import { missingSubcommand, UsageError } from "./errors.js";
import { sayReadWithoutWriting } from "./readWithoutWriting.js";
import { NOT_REPEATED, namesHere } from "./unnamed.js";

export const CATALOG_HELP = `usage: portcullis catalog show LABEL [--revision N] [--json] [--state-dir DIR]
       portcullis catalog diff LABEL [FROM TO] [--json] [--state-dir DIR]
       portcullis catalog list LABEL [--json] [--state-dir DIR]

show   the tools of a catalog revision (default: the latest) with their fingerprints
diff   field-level changes between two revisions (default: the previous and the latest),
       each classified expands | narrows | cosmetic; with one revision recorded, it says
       there is nothing to compare yet (exit 0)
list   every revision recorded for LABEL
--json the same as one JSON object on standard output; errors stay one sentence on standard
       error, with the same exit codes

An option may come before the subcommand: 'catalog --json list LABEL' is 'catalog list LABEL --json'.`;

const CATALOG_SUBCOMMANDS = ["show", "diff", "list"] as const;

const OPTIONS = {
  json: { type: "boolean" },
  revision: { type: "string" },
  "state-dir": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

/**
 * The subcommand a `catalog` line names: main.ts names a state directory's or a store's failure
 * with it ("portcullis catalog list: …"), as catalog's own refusals are named.
 */
export function catalogSubcommand(args: string[]): string | null {
  return givenSubcommand(args, OPTIONS, CATALOG_SUBCOMMANDS);
}

export async function catalogCommand(args: string[]): Promise<number> {
  const options = OPTIONS;
  // a refusal names the subcommand it is about, as vault's and audit's do
  const named = catalogSubcommand(args);
  const { values, positionals } = parse(named ? `catalog ${named}` : "catalog", args, options);
  // a word that is no subcommand is refused with --help too, as audit and vault refuse it: `catalog
  // lsit --help` printed the help, exit 0, as if the word were one
  if (positionals.length > 0 && named === null)
    throw new UsageError(`${unknownSubcommand("catalog", positionals[0]!, CATALOG_SUBCOMMANDS)}.`);
  if (values.help || positionals.length === 0) {
    process.stdout.write(`${CATALOG_HELP}\n`);
    if (!values.help) missingSubcommand("catalog", CATALOG_SUBCOMMANDS);
    return values.help ? 0 : 2;
  }
  const [sub, label, ...more] = positionals;
  if (sub !== "show" && sub !== "diff" && sub !== "list")
    throw new UsageError(`${unknownSubcommand("catalog", sub!, CATALOG_SUBCOMMANDS)}.`);
  if (!label) throw new UsageError(`catalog ${sub}: give a server LABEL.`);
  labelArgument(`catalog ${sub}`, label);
  // A word too many is refused, not passed over: `catalog show LABEL 3` showed the latest
  // revision, not revision 3 (that is --revision 3), and said nothing.
  if (sub !== "diff" && more.length > 0)
    throw new UsageError(
      `catalog ${sub}: takes one LABEL${sub === "show" ? " (a revision is given with --revision N)" : ""}.`,
    );
  // Three revision words or more is a word too many, not a FROM without its TO: said so, and a
  // FROM without its TO, before the store is opened (as the other words are checked), without
  // echoing them.
  if (sub === "diff" && more.length > 2)
    throw new UsageError(
      `catalog diff: takes a LABEL and at most two revisions (FROM TO); ${more.length} words were given after the LABEL.`,
    );
  if (sub === "diff" && more.length === 1)
    throw new UsageError("catalog diff: give both FROM and TO, or neither.");
  if (sub !== "show" && values.revision !== undefined)
    throw new UsageError(
      `catalog ${sub}: --revision is for catalog show${sub === "diff" ? " (diff takes FROM TO)" : ""}.`,
    );
  const revisionNumber = (s: string, what: string): number => {
    // digits only: Number() also reads "1e3", "0x2" and " 2" as revisions, and rounds a number
    // past 2^53 ("no revision 100000000000000000000" for the 99999999999999999999 typed)
    // and a leading zero ("01") is refused as every numeric flag refuses it (args.ts)
    if (/^0[0-9]/.test(s)) throw new UsageError(`catalog ${sub}: ${leadingZero(what, "number")}.`);
    const n = Number(s);
    if (!/^[1-9][0-9]*$/.test(s) || !Number.isSafeInteger(n))
      throw new UsageError(
        `catalog ${sub}: ${what} must be a revision number (1, 2, … as 'catalog list' shows them).`,
      );
    return n;
  };
  // read before the store is opened, as every other word: a revision that is no number is said as
  // such, not hidden behind "no catalog is recorded under that label"
  const wanted = values.revision !== undefined ? revisionNumber(values.revision, "--revision") : undefined;
  const fromTo =
    more.length === 2 ? [revisionNumber(more[0]!, "FROM"), revisionNumber(more[1]!, "TO")] : null;
  // only reads: a store on a full disk, or under a file size limit, is read all the same, saying so
  const store = openStoreToRead(existingStateDir(values["state-dir"]));
  sayReadWithoutWriting(store, `catalog ${sub}`);
  // Tool definitions are the server's words: a credential pasted into a description or default is not repeated.
  const out = (s: string) => process.stdout.write(redactText(s.endsWith("\n") ? s : `${s}\n`));
  try {
    const rev = (n: number) => {
      const r = getRevision(store, label, n);
      // what exists is said, as every "names nothing" refusal says it (README, "Commands"):
      // revisions are numbered from 1 with no gap, so the latest bounds them
      if (!r) {
        const last = latest?.revision ?? 0;
        const recorded = last === 1 ? "only revision 1 is recorded" : `revisions 1 to ${last} are recorded`;
        throw new UsageError(`catalog ${sub}: "${label}" has no revision ${n} (${recorded}).`);
      }
      return r;
    };
    const latest = latestRevision(store, label);
    if (!latest)
      throw new UsageError(
        `catalog ${sub}: no catalog is recorded under that label in this state directory (${NOT_REPEATED}); ${namesHere("labels recorded", recordedLabels(store), "none is recorded yet")}.`,
      );
    switch (sub) {
      case "list": {
        const revs = withSameAs(listRevisions(store, label));
        if (values.json) out(printableJson({ serverLabel: label, revisions: revs }));
        else
          for (const r of revs)
            out(
              `${r.revision}  ${r.fingerprint}  ${r.tools === null ? "tools unreadable (catalog_revisions.tools_json is no JSON list: rewritten in the store)" : `${r.tools} tools`}  first seen ${r.firstSeenAt}${r.sameAs === null ? "" : `  (the same catalog as revision ${r.sameAs})`}`,
            );
        return 0;
      }
      case "show": {
        const r = wanted !== undefined ? rev(wanted) : latest;
        if (r.unreadable !== undefined) return unreadableRevision(sub, label, r.unreadable);
        // (storedSnapshot: with the entries of its coverage that could not be fingerprinted)
        const snap = storedSnapshot(r);
        if (values.json) {
          out(
            printableJson({
              serverLabel: label,
              revision: r.revision,
              fingerprint: r.fingerprint,
              firstSeenAt: r.firstSeenAt,
              firstEpoch: r.firstEpoch,
              coverage: r.coverage,
              // as the text shows them: a default, const or examples under a secret-like name
              // redacted (the fingerprint is over the tool as the server listed it)
              tools: snap.tools.map((t) => ({
                fingerprint: snap.byName.get(t.name)?.fingerprint,
                tool: redactSchemaDefaults(t),
              })),
              // names listed with different definitions: stored and fingerprinted, never served
              ambiguous: [...snap.ambiguous].map(([name, defs]) => ({
                name,
                listed:
                  (snap.repeated.get(name)?.length ?? defs.length) + (snap.unfingerprintable?.get(name) ?? 0),
                // entries of it that could not be fingerprinted (not stored), when there are some
                ...(snap.unfingerprintable?.has(name)
                  ? { unfingerprintable: snap.unfingerprintable.get(name) }
                  : {}),
                definitions: defs.map((d) => ({
                  fingerprint: d.fingerprint,
                  tool: redactSchemaDefaults(d.tool),
                })),
              })),
            }),
          );
        } else out(renderCatalog(snap, r.revision));
        return 0;
      }
      case "diff": {
        let from: NonNullable<typeof latest>;
        let to: NonNullable<typeof latest>;
        if (fromTo) {
          from = rev(fromTo[0]!);
          to = rev(fromTo[1]!);
        } else if (more.length === 0) {
          to = latest;
          // One revision recorded is not the user's mistake (it was exit 2, a usage error): there
          // is nothing to compare yet, said as egress says "no egress recorded", with exit 0.
          if (latest.revision === 1) {
            const why = "only one revision is recorded: nothing to compare yet";
            if (values.json)
              out(
                printableJson({
                  serverLabel: label,
                  from: null,
                  to: 1,
                  entries: [],
                  renameCandidates: [],
                  expands: false,
                  nothingToCompare: why,
                }),
              );
            else
              out(
                `catalog diff: only one revision of "${label}" is recorded (revision 1, first seen ${latest.firstSeenAt}): nothing to compare yet; a change of its catalog is recorded as revision 2.`,
              );
            return 0;
          }
          const prev = getRevision(store, label, latest.revision - 1);
          if (!prev)
            throw new UsageError(
              `catalog diff: "${label}" has no revision ${latest.revision - 1} to compare revision ${latest.revision} with.`,
            );
          from = prev;
        } else throw new UsageError("catalog diff: give both FROM and TO, or neither."); // refused above
        const unreadable = from.unreadable ?? to.unreadable;
        if (unreadable !== undefined) return unreadableRevision(sub, label, unreadable);
        // Each of the server's pieces redacted on its own (shownDiff), not the whole text: the
        // diff's own words after a secret-like name (`api_token: property added`) are no secret.
        const diff = shownDiff(diffCatalogs(storedSnapshot(from), storedSnapshot(to)));
        const shown = (s: string) => process.stdout.write(s.endsWith("\n") ? s : `${s}\n`);
        if (values.json)
          shown(printableJson({ serverLabel: label, from: from.revision, to: to.revision, ...diff }));
        else shown(renderDiff(diff, { fromRevision: from.revision, toRevision: to.revision }));
        return 0;
      }
      default:
        throw new UsageError(`${unknownSubcommand("catalog", sub!, CATALOG_SUBCOMMANDS)}.`);
    }
  } finally {
    store.close();
  }
}

/**
 * A stored revision whose tools cannot be read (rewritten in the store: catalog_revisions.ts):
 * one sentence on stderr and exit 1, not an internal error. A gateway reads it as no tools.
 */
function unreadableRevision(sub: string, label: string, why: string): number {
  process.stderr.write(
    safeText(
      `portcullis catalog ${sub}: the stored catalog of "${label}" cannot be read (${why}): something rewrote it in the store, so it cannot be shown or compared; a gateway takes it as listing no tools, so any tool it serves is asked for again.`,
    ) + "\n",
  );
  return 1;
}

/**
 * Each revision with the earliest one of the same fingerprint before it (`sameAs`), or null: a
 * server rebuilt back to earlier code (a branch switched back, a change reverted) records a new
 * revision of a catalog already seen, and two equal fingerprints read one under the other left
 * the reader to compare 64 hex digits to find it out.
 */
function withSameAs<R extends { revision: number; fingerprint: string }>(
  revs: R[],
): (R & { sameAs: number | null })[] {
  const first = new Map<string, number>();
  return revs.map((r) => {
    const seen = first.get(r.fingerprint);
    if (seen === undefined) first.set(r.fingerprint, r.revision);
    return { ...r, sameAs: seen ?? null };
  });
}
