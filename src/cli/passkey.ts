import { userInfo } from "node:os";
import { listPasskeys, PasskeyError, removePasskey } from "../approval/passkey.js";
import { passkeyRows } from "../approval/passkeyRows.js";
import { safeText } from "../catalog/text.js";
import { readConsoleAddress } from "../console/address.js";
import { atPasskeyOrigin } from "../console/passkeyOrigin.js";
import { KeyringMissingError } from "../keyring/keyringErrors.js";
import { openExistingStore, openStoreToRead, type Store } from "../store/db.js";
import { quotedCommand } from "../store/stateDir.js";
import { printableJson } from "../util/printableJson.js";
import { givenSubcommand, parse, unknownSubcommand } from "./args.js";
import { EXIT_CHECK_FAILED, EXIT_OK, EXIT_USAGE, missingSubcommand, UsageError } from "./errors.js";
import { failureLine } from "./failureLine.js";
import { sayReadWithoutWriting } from "./readWithoutWriting.js";

export const PASSKEY_HELP = `usage: portcullis passkey list [--json] [--state-dir DIR]
       portcullis passkey add [--state-dir DIR]
       portcullis passkey rm ID [--state-dir DIR]

Passkeys (Touch ID, Windows Hello, a security key) that can approve or deny
requests in the console, as the passphrase can. Each is pinned in the audit chain
when it is added, after the passphrase; gateways honour only pinned passkeys.
  list   id, name, when added, when last used; a passkey that gateways do not
         honour (not pinned, or removed) is marked with the reason
  add    registration happens in the browser: this prints the console's page
         (the console must be running: 'portcullis console' starts it)
  --json (list) the same as one JSON object on standard output, {"passkeys": [...]}
  rm ID  takes a passkey's authority away (recorded in the audit chain); no
         passphrase needed. Its grants stop covering calls. ID may be a unique
         prefix of at least 6 characters.
An option may come before the subcommand: 'passkey --json list' is 'passkey list --json'.`;

const PASSKEY_SUBCOMMANDS = ["list", "add", "rm"] as const;

const OPTIONS = {
  json: { type: "boolean" },
  "state-dir": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

/**
 * The subcommand a `passkey` line names, read as passkeyCommand reads it, from the words main.ts
 * is given: a failure met before the subcommand runs (no state directory, a store that cannot be
 * used, `--state-dir` given twice) names it too ("portcullis passkey rm: …").
 */
export function passkeySubcommand(args: string[]): string | null {
  return givenSubcommand(idAfterRm(args), OPTIONS, PASSKEY_SUBCOMMANDS);
}

/** `portcullis passkey list|add|rm`: returns the exit code (0, 1 or 2). */
export async function passkeyCommand(
  args: string[],
  ctx: { stateDir: string; hint: string | undefined },
): Promise<number> {
  try {
    return run(args, ctx);
  } catch (e) {
    if (e instanceof UsageError) return fail(EXIT_USAGE, e.message);
    // named by the command, as vault's, unlock's and audit's are (its sentence names none)
    const sub = passkeySubcommand(args);
    if (e instanceof KeyringMissingError)
      return fail(EXIT_USAGE, `passkey${sub ? ` ${sub}` : ""}: ${e.message}`);
    if (e instanceof PasskeyError) {
      // the message may hold an id as typed: printed inert. Named by the subcommand that met it
      // ("passkey rm: there is no passkey with that ID"), as the usage refusals are.
      return fail(
        e.kind === "not-found" ? EXIT_USAGE : EXIT_CHECK_FAILED,
        `passkey${sub ? ` ${sub}` : ""}: ${safeText(e.message)}.`,
      );
    }
    throw e;
  }
}

function fail(code: number, message: string): number {
  // written here, not by the command line's reportFailure: escaped as it escapes (a keyring's
  // path in the state directory, which may hold a control character)
  process.stderr.write(`${safeText(failureLine(message))}\n`);
  return code;
}

/**
 * A passkey ID is base64url, so it may start with '-' (`-rX9…`): after `rm`, an argument that is
 * none of this command's options is the ID, not an unknown option.
 */
function idAfterRm(args: string[]): string[] {
  const at = args.indexOf("rm");
  const id = args[at + 1];
  if (at === -1 || id === undefined || !id.startsWith("-") || id === "--") return args;
  // after a `--` already (`passkey -- rm -rX9…`): an operand as it is; a second `--` made it one
  const end = args.indexOf("--");
  if (end !== -1 && end < at) return args;
  if (/^(?:-h|--help|--json|--state-dir)(?:=|$)/.test(id)) return args;
  return [...args.slice(0, at + 1), ...args.slice(at + 2), "--", id];
}

/**
 * The state directory (resolved when first read: main.ts) is read once the words are: a mistyped
 * flag is said before a missing state directory is; the usage errors' hints name `ctx.hint`.
 */
function run(args: string[], ctx: { stateDir: string; hint: string | undefined }): number {
  // a refusal names the subcommand it is about, as vault's and audit's do
  const words = idAfterRm(args);
  const named = givenSubcommand(words, OPTIONS, PASSKEY_SUBCOMMANDS);
  const { values, positionals } = parse(named ? `passkey ${named}` : "passkey", words, OPTIONS);
  // a word that is no subcommand is refused with --help too, as audit and vault refuse it
  if (positionals.length > 0 && named === null)
    throw new UsageError(`${unknownSubcommand("passkey", positionals[0]!, PASSKEY_SUBCOMMANDS)}.`);
  if (values.help || positionals.length === 0) {
    process.stdout.write(`${PASSKEY_HELP}\n`);
    if (!values.help) missingSubcommand("passkey", PASSKEY_SUBCOMMANDS);
    return values.help ? EXIT_OK : EXIT_USAGE;
  }
  const [verb, ...rest] = positionals;
  const wants = verb === "rm" ? 1 : 0;
  if (verb !== "list" && verb !== "add" && verb !== "rm") {
    throw new UsageError(`${unknownSubcommand("passkey", verb!, PASSKEY_SUBCOMMANDS)}.`);
  }
  // an empty word (an unset `$ID`) is no ID: "there is no passkey ." said nothing
  if (wants && rest.length > wants)
    throw new UsageError(`passkey rm: takes one passkey ID (${rest.length} words were given, not shown).`);
  if (rest.length !== wants || rest[0] === "") {
    throw new UsageError(
      wants
        ? `passkey rm: give the passkey ID (see ${quotedCommand("passkey list", ctx.hint)}).`
        : `passkey ${verb}: takes no arguments.`,
    );
  }
  if (values.json && verb !== "list") throw new UsageError(`passkey ${verb}: --json is for 'passkey list'.`);
  const stateDir = ctx.stateDir;
  if (verb === "add") return add(stateDir);
  // list only reads: a store on a full disk, or under a file size limit, is read all the same
  const db = verb === "list" ? openStoreToRead(stateDir) : openExistingStore(stateDir);
  try {
    if (verb === "list") sayReadWithoutWriting(db, "passkey list");
    return verb === "list" ? list(db, stateDir, !!values.json) : rm(db, stateDir, rest[0]!);
  } finally {
    db.close();
  }
}

/** Registration needs a browser (WebAuthn): the console's passkeys page does it. */
function add(stateDir: string): number {
  const console = readConsoleAddress(stateDir);
  if (!console) {
    return fail(
      EXIT_USAGE,
      `passkey add: passkeys are registered in the console, after the passphrase: start it with ${quotedCommand("console", stateDir)} and open its page /passkeys.`,
    );
  }
  // at localhost, not 127.0.0.1: browsers refuse an IP address as a passkey's relying party
  process.stdout.write(
    `Register a passkey in the console (after the passphrase): ${atPasskeyOrigin(console.url)}/passkeys\n`,
  );
  return EXIT_OK;
}

function list(db: Store, stateDir: string, json: boolean): number {
  const passkeys = listPasskeys(db, stateDir);
  if (json) {
    process.stdout.write(`${printableJson({ passkeys })}\n`);
    return EXIT_OK;
  }
  if (passkeys.length === 0) {
    process.stdout.write(`no passkey is registered (${quotedCommand("passkey add", stateDir)} says how)\n`);
    return EXIT_OK;
  }
  for (const p of passkeys) {
    process.stdout.write(
      `${p.id}  ${safeText(JSON.stringify(p.name))}  added ${p.createdAt}  last used ${p.lastUsedAt ?? "never"}\n`,
    );
    if (!p.honoured) process.stdout.write(`    NOT honoured by gateways: ${safeText(p.why ?? "")}\n`);
  }
  return EXIT_OK;
}

function rm(db: Store, stateDir: string, given: string): number {
  const id = resolveId(db, given);
  const seq = removePasskey(
    db,
    stateDir,
    id,
    `${userName()} via 'portcullis passkey rm' (pid ${process.pid})`,
  );
  process.stdout.write(`removed passkey ${id}: its decisions are no longer honoured (audit record ${seq})\n`);
  return EXIT_OK;
}

/** The full id of `given`: itself, or the one registered passkey it is a prefix of (6+ characters). */
function resolveId(db: Store, given: string): string {
  const ids = passkeyRows(db).map((r) => r.credentialId);
  if (ids.includes(given) || given.length < 6) return given;
  const matches = ids.filter((id) => id.startsWith(given));
  if (matches.length > 1) {
    throw new UsageError(
      `passkey rm: ${safeText(given)} is the start of ${matches.length} passkeys; give more of the ID.`,
    );
  }
  return matches[0] ?? given;
}

function userName(): string {
  try {
    return userInfo().username;
  } catch {
    return "unknown user";
  }
}
