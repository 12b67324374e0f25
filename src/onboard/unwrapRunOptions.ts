// A wrapped entry whose `run` options the user edited since wrap: the gateway's status line and
// docs/onboarding.md tell the user to add `--on-change restart` before the entry's '--', and
// unwrap then refused the entry because its args were no longer exactly what wrap wrote. Such an
// entry is given back when it still starts exactly the recorded server; anything else is refused.
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

/**
 * Whether `current` is the entry wrap wrote with only `run`'s own options added, removed or
 * changed: the same command (node) and CLI as recorded, then `run`, options run takes and
 * nothing else, then at run's first '--' exactly the recorded original command and args (the
 * first '--' is where run itself ends its options). Returns the options added or changed since
 * wrap (dropped with the wrap, to be named), or null when the entry is anything else: a server
 * command or argument changed in any way, or an entry that no longer starts portcullis's run.
 */
export function runOptionsEdited(current: Entry, e: RecordedEntry): string[] | null {
  const args = current.args;
  const wrapped = e.wrapped.args;
  if (!Array.isArray(args) || !args.every((a) => typeof a === "string")) return null;
  if (!Array.isArray(wrapped) || typeof wrapped[0] !== "string") return null;
  if (typeof current.command !== "string" || current.command !== e.wrapped.command) return null;
  if (args[0] !== wrapped[0] || args[1] !== "run") return null;
  const runArgs = args.slice(2);
  const sep = runArgs.indexOf("--");
  if (sep === -1) return null;
  const original = [e.original.command, ...(Array.isArray(e.original.args) ? e.original.args : [])];
  if (e.original.args !== undefined && !Array.isArray(e.original.args)) return null;
  if (!sameJson(runArgs.slice(sep + 1), original)) return null;
  const now = runOptionWords(runArgs.slice(0, sep));
  const wrappedRun = (wrapped as unknown[]).slice(2);
  const wrappedSep = wrappedRun.indexOf("--");
  if (now === null || wrappedSep === -1) return null;
  const before = new Set(runOptionWords(wrappedRun.slice(0, wrappedSep) as string[]) ?? []);
  return now.filter((w) => !before.has(w)).map(shownOption);
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
