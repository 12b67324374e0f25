// A wrapped entry whose `run` options the user edited since wrap: the gateway's status line and
// docs/onboarding.md tell the user to add `--on-change restart` before the entry's '--', and
// unwrap then refused the entry because its args were no longer exactly what wrap wrote. Such an
// entry is given back when it still starts exactly the recorded server; anything else is refused.
import { basename } from "node:path";
import { parse } from "../cli/args.js";
import { UsageError } from "../cli/errors.js";
import { RUN_OPTIONS } from "../cli/runOptions.js";
import { sameJson } from "../util/canonical.js";
import { redactText } from "../util/redact.js";
import { shellWord } from "../util/shellWord.js";
import type { Entry } from "./document.js";
import type { RecordedEntry } from "./wrapRecord.js";

/** Options whose value may carry a credential or a private address (`--header 'Authorization: …'`): named, never shown. */
const VALUE_NOT_SHOWN = new Set(["header", "url"]);

/** `run`'s options (before its '--') as "NAME\0VALUE" words, or null when they are not only run's options. */
function runOptionWords(runArgs: string[]): string[] | null {
  let parsed: ReturnType<typeof parse<typeof RUN_OPTIONS>>;
  try {
    parsed = parse("run", runArgs, RUN_OPTIONS);
  } catch (e) {
    if (e instanceof UsageError) return null;
    throw e;
  }
  // a word that is no option (a LABEL of portcullis.json) is not an option edit
  if (parsed.positionals.length > 0) return null;
  const words: string[] = [];
  for (const t of parsed.tokens ?? [])
    if (t.kind === "option") words.push(`${t.name}\0${t.value ?? ""}`);
    else return null;
  return words;
}

/** One option word as unwrap's line shows it: `--on-change restart`, a value that may hold a secret not at all. */
function shownOption(word: string): string {
  const [name, value] = word.split("\0") as [string, string];
  if (RUN_OPTIONS[name as keyof typeof RUN_OPTIONS].type === "boolean") return `--${name}`;
  if (VALUE_NOT_SHOWN.has(name)) return `--${name} (value not shown)`;
  return `--${name} ${shellWord(redactText(value))}`;
}

/** What unwrap gives back of an entry edited since wrap, and what it names of the edit. */
export interface RunEdits {
  /** run's options added or changed since wrap (dropped with the wrap), as shown */
  options: string[];
  /** the parts of the launcher that differ from wrap's: the node in "command", the CLI, as `WAS → NOW` */
  launcher: string[];
}

/** The CLI an entry runs and the index of its `run`: `NODE …/cli/main.cjs run` or `portcullis run`; null for any other. */
function portcullisRun(command: string, args: string[]): { cli: string; run: number } | null {
  if (typeof args[0] === "string" && /[\\/]cli[\\/]main\.c?js$/.test(args[0]) && args[1] === "run")
    return { cli: args[0], run: 1 };
  if (/^portcullis(\.cmd|\.exe)?$/.test(basename(command)) && args[0] === "run")
    return { cli: command, run: 0 };
  return null;
}

/**
 * Whether `current` is the entry wrap wrote with only its launcher moved and `run`'s own options
 * edited: still portcullis's `run` (any node and CLI path: portcullis reinstalled elsewhere, node
 * upgraded, or `portcullis run` as the bin), options run takes and nothing else, then at run's
 * first '--' exactly the recorded original command and args (the first '--' is where run itself
 * ends its options). Returns what differs from wrap's (named by unwrap: the options are dropped
 * with the wrap, the launcher was portcullis's), or null when the entry is anything else: a server
 * command or argument changed in any way, or an entry that no longer starts portcullis's run.
 */
export function runOptionsEdited(current: Entry, e: RecordedEntry): RunEdits | null {
  const args = current.args;
  const wrapped = e.wrapped.args;
  if (!Array.isArray(args) || !args.every((a) => typeof a === "string")) return null;
  if (!Array.isArray(wrapped) || !wrapped.every((a) => typeof a === "string")) return null;
  if (typeof current.command !== "string" || typeof e.wrapped.command !== "string") return null;
  const now = portcullisRun(current.command, args);
  const then = portcullisRun(e.wrapped.command, wrapped);
  if (now === null || then === null) return null;
  const runArgs = args.slice(now.run + 1);
  const sep = runArgs.indexOf("--");
  if (sep === -1) return null;
  const original = [e.original.command, ...(Array.isArray(e.original.args) ? e.original.args : [])];
  if (e.original.args !== undefined && !Array.isArray(e.original.args)) return null;
  if (!sameJson(runArgs.slice(sep + 1), original)) return null;
  const options = runOptionWords(runArgs.slice(0, sep));
  const wrappedRun = wrapped.slice(then.run + 1);
  const wrappedSep = wrappedRun.indexOf("--");
  if (options === null || wrappedSep === -1) return null;
  const before = new Set(runOptionWords(wrappedRun.slice(0, wrappedSep)) ?? []);
  const launcher: string[] = [];
  // each word as a shell would take it, a word that reads as a secret redacted
  const words = (w: string[]) => w.map((x) => shellWord(redactText(x))).join(" ");
  const moved = (what: string, was: string[], is: string[]) => {
    if (!sameJson(was, is)) launcher.push(`${what} ${words(was)} → ${words(is)}`);
  };
  if (now.run === then.run) {
    moved("node", [e.wrapped.command], [current.command]);
    moved("CLI", [then.cli], [now.cli]);
  } else
    moved(
      "launcher",
      [e.wrapped.command, ...wrapped.slice(0, then.run)],
      [current.command, ...args.slice(0, now.run)],
    );
  return { options: options.filter((w) => !before.has(w)).map(shownOption), launcher };
}

/**
 * Which parts of a still-wrapped entry unwrap refuses to give back differ from what wrap wrote,
 * for its refusal: the server after run's first '--', the node in "command", the portcullis CLI
 * in the first of "args", run's options before the '--' (not only options run takes, each once),
 * or the "run … --" itself gone. Run options edited as run reads them are not named: unwrap
 * gives those back (runOptionsEdited), so they are not why an entry is refused.
 */
export function changedParts(current: Entry, e: RecordedEntry): string[] {
  const parts: string[] = [];
  const args: unknown[] = Array.isArray(current.args) ? current.args : [];
  const wrapped: unknown[] = Array.isArray(e.wrapped.args) ? e.wrapped.args : [];
  if (!sameJson(current.command, e.wrapped.command)) parts.push(`its "command" (the node wrap wrote)`);
  if (!sameJson(args[0], wrapped[0])) parts.push(`the portcullis CLI it runs (the first of its "args")`);
  const runAt = args.indexOf("run");
  const sep = runAt === -1 ? -1 : args.indexOf("--", runAt + 1);
  if (sep === -1) return [...parts, `its "args" (no "run" with a "--" before the server any more)`];
  const original = [e.original.command, ...(Array.isArray(e.original.args) ? e.original.args : [])];
  if (!sameJson(args.slice(sep + 1), original))
    parts.push(`the server after its "--" (the command and args portcullis starts)`);
  const options = args.slice(runAt + 1, sep);
  if (!options.every((w) => typeof w === "string") || runOptionWords(options as string[]) === null)
    parts.push(`run's options before its "--" (not only options run takes, each once)`);
  return parts.length > 0 ? parts : [`its "command" or "args"`];
}
