import { type ParseArgsConfig, parseArgs } from "node:util";
import { LABEL_PATTERN, LABEL_RULE } from "../config/config.js";
import { nearestName } from "../util/nearest.js";
import { UsageError } from "./errors.js";

type Options = NonNullable<ParseArgsConfig["options"]>;

/**
 * node:util parseArgs with errors turned into one-sentence usage errors that name the command
 * and the flag, and never a value: a word on a command line where it does not belong is often a
 * passphrase or a secret (`--value=sk-…`, `init hunter2`), and stderr ends up in terminals'
 * scrollback, CI logs and agents' transcripts.
 */
export function parse<O extends Options>(
  command: string,
  args: string[],
  options: O,
  allowPositionals = true,
) {
  const parsed = strictParse(command, args, options, allowPositionals);
  refuseRepeated(command, parsed.tokens, options);
  return parsed;
}

function strictParse<O extends Options>(
  command: string,
  args: string[],
  options: O,
  allowPositionals: boolean,
) {
  try {
    return parseArgs({ args, options, allowPositionals, strict: true, tokens: true });
  } catch (e) {
    throw new UsageError(`${command}: ${refusal(e, command, args, options)}.`);
  }
}

/**
 * An option that takes one value, given twice: node keeps the last, which for `--state-dir A
 * --state-dir B` (a wrapper adding its own, a line edited in a hurry) silently reads or writes
 * another state directory than one of the two meant. Refused naming the option, never a value.
 * Options that take several (`multiple`) and flags without a value are not concerned.
 */
function refuseRepeated(
  command: string,
  tokens: { kind: string; name?: string }[] | undefined,
  options: Options,
): void {
  const seen = new Set<string>();
  for (const t of tokens ?? []) {
    if (t.kind !== "option" || t.name === undefined) continue;
    const o = options[t.name];
    if (o?.type !== "string" || o.multiple) continue;
    if (seen.has(t.name)) throw new UsageError(`${command}: ${repeated(`--${t.name}`)}.`);
    seen.add(t.name);
  }
}

/** The refusal, without its final period, of an option that takes one value given more than once. */
export function repeated(flag: string): string {
  return `${flag} is given more than once; give it once`;
}

/**
 * The group's subcommand on a line one parser reads whole (`catalog`, `passkey`): its first word
 * that is not an option or an option's value, when it is one of `subcommands`; else null. Its
 * refusals then name it, as vault's and audit's do ("portcullis catalog show: …").
 */
export function givenSubcommand(
  args: string[],
  options: Options,
  subcommands: readonly string[],
): string | null {
  try {
    const { tokens } = parseArgs({ args, options, allowPositionals: true, strict: false, tokens: true });
    const first = tokens.find((t) => t.kind === "positional");
    const word = first?.kind === "positional" ? first.value : undefined;
    return word !== undefined && subcommands.includes(word) ? word : null;
  } catch {
    return null;
  }
}

/** How many words the command line holds that are not options or their values. */
function positionalCount(args: string[], options: Options): number {
  try {
    const { tokens } = parseArgs({ args, options, allowPositionals: true, strict: false, tokens: true });
    return tokens.filter((t) => t.kind === "positional").length;
  } catch {
    return 1;
  }
}

/** What was wrong, built from node's error code and the flag's name alone (node's text may quote an argument). */
function refusal(e: unknown, command: string, args: string[], options: Options): string {
  const code = (e as { code?: unknown }).code;
  const message = e instanceof Error ? e.message : "";
  if (code === "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL")
    return `${unexpectedArguments(Math.max(1, positionalCount(args, options)))}${afterTerminator(args)}`;
  // node names an option with a short alias as '-h, --help' (`--help=x`): the long name is shown,
  // as for any other option, not "an option (not shown …)"
  const flag = flagName(/'(-[^']*)'/.exec(message)?.[1]?.replace(/^-[A-Za-z], (?=--)/, ""));
  if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
    // where to look: the command's own help; for `run`, whose server command follows '--', also
    // where a value that starts with '-' goes (elsewhere that advice sends the user the wrong way)
    const help = `'portcullis ${command} --help' lists the options`;
    const where = command === "run" ? `a value that starts with '-' goes after '--'; ${help}` : help;
    if (flag === NOT_SHOWN_FLAG) return `${UNKNOWN_NOT_SHOWN}; ${where}`;
    const near = nearestOption(flag, options);
    return near ? `unknown option ${flag} (did you mean --${near}?)` : `unknown option ${flag} (${where})`;
  }
  if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") {
    if (/does not take an argument/.test(message)) return `${flag} takes no value`;
    if (/ambiguous/.test(message))
      return `${flag} needs a value (one that starts with '-' is written ${flag}=-…)`;
    if (/argument missing/.test(message)) return `${flag} needs a value`;
    return `${flag} has a value it does not take`;
  }
  return "cannot read the arguments";
}

/**
 * What an unexpected word after `--` is: an operand, as everything after it is (POSIX), even one
 * that reads as an option (`vault -- list --json`); said so, with where options go. Empty when no
 * word after a `--` reads as an option (nothing is shown of the words either way).
 */
function afterTerminator(args: string[]): string {
  const end = args.indexOf("--");
  if (end === -1 || !args.slice(end + 1).some((a) => readsAsFlag(a.replace(/=.*$/s, "")))) return "";
  return "; every word after '--' is an operand, never an option: give the options before it";
}

/**
 * The command's option a mistyped `--flag` most likely meant: the one within two edits (a letter
 * added, dropped, changed, or two swapped), when exactly one is that near; null otherwise.
 */
export function nearestOption(flag: string, options: Options): string | null {
  if (!flag.startsWith("--")) return null;
  return nearestName(flag.slice(2), Object.keys(options));
}

/**
 * The option as named on the command line: `--value` of `--value=sk-…`, nothing after `=` or a
 * space; and only when it reads as an option's name (letters and dashes, as a mistyped command
 * is shown: shownWord). A passphrase or a key that starts with a dash (`-Xy9…`, `--sk-live-4eC…`)
 * given where it does not belong is read as an option, and is not repeated.
 */
export function flagName(raw: string | undefined): string {
  const name = /^-{1,2}[^=\s<]*/.exec(raw ?? "")?.[0];
  if (!name || name === "-" || name === "--") return "an option";
  return readsAsFlag(name) ? name : NOT_SHOWN_FLAG;
}

/** Whether a dashed word reads as an option's name, and so may be repeated in a refusal. */
export function readsAsFlag(name: string): boolean {
  return /^--?[A-Za-z][A-Za-z-]{0,39}$/.test(name);
}

/** The refusal of an unknown option that does not read as one (flagName). */
export const UNKNOWN_NOT_SHOWN =
  "unknown option (not shown: it does not read as one, and may be a secret typed in the wrong place)";

/** What a refusal says instead of a dashed word that does not read as an option's name. */
export const NOT_SHOWN_FLAG =
  "an option (not shown: it does not read as one, and may be a secret typed in the wrong place)";

/**
 * The refusal of words a command does not take, by count only: the word itself is not shown,
 * in case it is the passphrase or a secret typed in the wrong place.
 */
export function unexpectedArguments(count: number): string {
  return `unexpected argument${count === 1 ? "" : "s"} (${count}, not shown: a passphrase or a secret is never given on the command line)`;
}

/**
 * An option given an empty value, as `--config "$FILE"` with FILE unset gives: refused, naming the
 * option and what leaving it out does, as an empty --state-dir is (src/store/stateDir.ts). Taken as
 * absent, it did that without a word: read another file than the one meant (portcullis.json found
 * upward), verify the state directory's log in place of an export, rebuild nothing.
 */
export function refuseEmpty(
  command: string,
  flag: string,
  value: string | undefined,
  give: string,
  without: string,
): void {
  if (value === "") throw new UsageError(`${command}: ${emptyValue(flag, give, without)}.`);
}

/** The refusal of an option given an empty value (refuseEmpty), without its final period. */
export function emptyValue(flag: string, give: string, without: string): string {
  return `--${flag} is empty; give ${give}, or leave the flag out ${without}`;
}

/**
 * The refusal, without its final period, of a number written with a leading zero (`--port 08080`,
 * `--hold-timeout 0100`): it was read as the number without the zeros, another than the one a
 * reader of the line (or a tool that reads 0-prefixed numbers as octal) takes it for. The value is
 * not repeated, as for every bad value of a known flag.
 */
export function leadingZero(flag: string, what: "port" | "number"): string {
  return `${flag} is written with a leading zero; write the ${what} without it`;
}

/**
 * A flag's whole number as written on the command line: its digits' value, NaN for anything that
 * is not digits only (`0x10`, `1e3`, ` 5`, an empty `--flag=`: the caller says its range), and a
 * UsageError for digits with a leading zero (leadingZero). Every numeric flag reads its value
 * here, so that `--listen-max-sessions 016` is refused as `--listen 127.0.0.1:08080` is.
 */
export function wholeNumber(command: string, flag: string, value: string): number {
  if (/^0[0-9]/.test(value)) throw new UsageError(`${command}: ${leadingZero(`--${flag}`, "number")}.`);
  return /^[0-9]+$/.test(value) ? Number(value) : Number.NaN;
}

export function oneOf<T extends string>(
  command: string,
  flag: string,
  value: string | undefined,
  allowed: readonly T[],
): T | undefined {
  if (value === undefined) return undefined;
  if (!allowed.includes(value as T)) {
    // the value is not repeated: it may be something else typed in the wrong place
    throw new UsageError(`${command}: --${flag} must be one of ${allowed.join(", ")}.`);
  }
  return value as T;
}

/**
 * A command or subcommand word that is not one, as a refusal shows it: quoted when it reads as a
 * mistyped command (`lsit`, `verfy`), which is what helps, and otherwise not at all. A word where
 * a command belongs may be a secret pasted on the wrong line (`portcullis sk-live-…`, `vault
 * ghp_…` for `vault set`), and the refusal goes to scrollback, CI logs and transcripts.
 */
export function shownWord(word: string): string {
  // an empty word (an unset `$SUB`) is no secret, and "not shown" would hide that it is empty
  if (word === "") return '"" (an empty word)';
  return /^[A-Za-z][A-Za-z-]{0,31}$/.test(word)
    ? `"${word}"`
    : "(not shown: it does not read as one, and may be a secret typed in the wrong place)";
}

/**
 * The refusal, without its final period, of a group's subcommand word that is none of its
 * subcommands (`vault lsit`), in one wording for every group, as `portcullis lsit` is refused:
 * the word shown only when it reads as a mistyped subcommand (shownWord), the subcommand it most
 * likely meant, the ones there are, and where each is told.
 */
export function unknownSubcommand(group: string, word: string, subcommands: readonly string[]): string {
  const shown = shownWord(word);
  const near = shown.startsWith('"') ? nearestName(word, subcommands) : null;
  const listed = `${subcommands.slice(0, -1).join(", ")} or ${subcommands.at(-1)}`;
  return `${group}: unknown subcommand ${shown}${near ? ` (did you mean ${near}?)` : ""}; use ${listed} ('portcullis ${group} --help' says what each does)`;
}

/**
 * A group's words with the options written before its subcommand moved after it: `vault --json
 * list` is read as `vault list --json`, as `catalog --json list` and `passkey --json list` are (one
 * parser reads their whole line). `options` holds every option of the group's subcommands, so that
 * one taking a value keeps it (`audit --file F verify`); an option none of them has, or one given
 * wrong, is refused here as the group's parser refuses it, naming it only when it reads as one.
 * A `--` before the subcommand ends the options, as everywhere (POSIX): the word after it is the
 * subcommand, and every word after that stays an operand (`vault --json -- list` is `vault list
 * --json --`, read as catalog's and passkey's one parser reads it; it was refused as an
 * unexpected argument). Null when no subcommand follows the options (`vault --json`, `vault --`):
 * the group then asks for one.
 */
export function subcommandFirst(group: string, args: string[], options: Options): string[] | null {
  if (!args[0]?.startsWith("-")) return args;
  let tokens: { kind: string; index: number }[];
  try {
    tokens = parseArgs({ args, options, allowPositionals: true, strict: false, tokens: true }).tokens;
  } catch {
    tokens = [];
  }
  const first = tokens.find((t) => t.kind !== "option");
  const end = first?.kind === "option-terminator" ? first.index : -1;
  const at = first?.kind === "positional" ? first.index : end !== -1 && end + 1 < args.length ? end + 1 : -1;
  // the options before it, through the shared parser: an unknown one is refused by its name
  const before = end !== -1 ? args.slice(0, end) : at === -1 ? args : args.slice(0, at);
  parse(group, before, options, false);
  if (at === -1) return null;
  // after a `--`, what follows the subcommand is still after one: operands, not options
  return [args[at]!, ...before, ...(end !== -1 ? ["--"] : []), ...args.slice(at + 1)];
}

/**
 * The refusal, without its final period, of a dashed word where the command goes (`portcullis
 * --json status`): the option by its name only, and where it goes. (A group's subcommand may come
 * after its options: subcommandFirst.)
 */
export function optionTooEarly(word: string): string {
  const flag = flagName(word);
  const help = "run 'portcullis --help' for the commands";
  return flag === NOT_SHOWN_FLAG
    ? `a word that starts with '-' came before the command (not shown: it does not read as an option, and may be a secret typed in the wrong place); options go after the command (portcullis COMMAND --option …); ${help}`
    : `${flag} goes after the command (portcullis COMMAND ${flag} …); ${help}`;
}

/**
 * A server LABEL given on the command line, to look up: one that cannot be a label (any length,
 * control characters, a secret pasted in its place) is refused without being repeated, since no
 * server ran or is configured under it; one that can be is plain and at most 64 characters, and
 * is quoted as it is where a sentence names it.
 */
export function labelArgument(command: string, label: string): string {
  if (!LABEL_PATTERN.test(label))
    throw new UsageError(
      `${command}: the LABEL given is not a server label (${LABEL_RULE}), so no server runs under it (not shown, in case it is something else typed in its place).`,
    );
  return label;
}
