import { existsSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { quotedName, safeText } from "../catalog/text.js";
import { LABEL_PATTERN, LABEL_RULE } from "../config/config.js";
import { keyringExists } from "../keyring/keyringRead.js";
import { lineDiff } from "../onboard/diff.js";
import { credentialInClear } from "../onboard/doctorEnv.js";
import { headerSecretFlag, headersInClear } from "../onboard/doctorHeaders.js";
import { OnboardError, readHostServers, readServers } from "../onboard/document.js";
import { HOSTS, type HostFile, type HostName, hostFileFromPath, hostFiles } from "../onboard/hosts.js";
import type { LabelHistoryNote } from "../onboard/wrap.js";
import {
  assertWritable,
  checkServersNamed,
  leftAsHttp,
  NOT_SHOWN_KEY,
  planWrap,
  recordExists,
  serverKeyAsGiven,
  unwrapCommand,
  unwrapFile,
  type WrapOptions,
  type WrapPlan,
  wrapFile,
} from "../onboard/wrap.js";
import { resolveStateDir, stateDirFlagFor, stateDirPath } from "../store/stateDir.js";
import { nearestName } from "../util/nearest.js";
import { printableJson } from "../util/printableJson.js";
import { looksGenerated, REDACTED, redactArgv, redactText } from "../util/redact.js";
import { shellWord } from "../util/shellWord.js";
import { parse } from "./args.js";
import { EXIT_CHECK_FAILED, EXIT_USAGE, UsageError } from "./errors.js";
import { failureLine } from "./failureLine.js";

export const WRAP_HELP = `usage: portcullis wrap [HOST|FILE] [--dry-run] [--json] [--servers a,b] [--label KEY=LABEL] [--state-dir DIR]
       portcullis unwrap [HOST|FILE] [--state-dir DIR]

Puts portcullis in front of every stdio server of a host's MCP configuration (wrap), or takes it
away again (unwrap: the original bytes when the file was not edited since, else wrap's command
and args of each entry still as wrap wrote them). HOST: ${HOSTS.join(", ")} (default:
claude-code; its ~/.claude.json entries are this project's and the user's). FILE: a configuration
file (unwrap FILE undoes every entry recorded for it, all projects included).
Each wrapped entry keeps its env, cwd and every other key (its command and args go after '--'),
gets a label from its key, and names node, the portcullis CLI and the state directory by absolute
path. Servers already wrapped are left as they are. An entry holding a key its host does not
read ("arg" for "args") is not wrapped: named, with the key meant, the others wrapped, exit 1.
The file before its first wrap is kept beside it as FILE.portcullis-backup.
  --dry-run          print the diff, write nothing
  --json             what was wrapped (or, with --dry-run, would be) and left alone, as JSON
  --servers a,b      only these servers (each must be in one of the host's files)
  --label KEY=LABEL  the label for server KEY (repeatable), when its own is taken by another server`;

/**
 * A line of wrap's or unwrap's report. It names the host file's server keys, which are whatever
 * the file says (a project's `.mcp.json` comes with a cloned repository): every character a
 * terminal would act on or a reader cannot see is written as an escape, as doctor writes them.
 */
function say(line: string, to: NodeJS.WritableStream = process.stdout): void {
  to.write(`${safeText(line)}\n`);
}

const OPTIONS = {
  "dry-run": { type: "boolean" },
  json: { type: "boolean" },
  servers: { type: "string" },
  label: { type: "string", multiple: true },
  "state-dir": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

/**
 * unwrap's, as its help says: `unwrap --dry-run` was accepted and restored the file for real (the
 * opposite of what was asked), and `unwrap --servers a` unwrapped every server.
 */
const UNWRAP_OPTIONS = {
  "state-dir": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

/**
 * Whether a word that names no host and no file is plainly a path the user meant (so the sentence
 * may name it): one that starts as a path does or ends as a host file does. A word that merely
 * holds a '/' is not enough: base64 secrets hold them (an AWS secret key), and a word that names
 * nothing is never repeated in case it is a secret typed in the wrong place. Nor is a word the
 * redaction would hide.
 */
function plainlyAPath(arg: string): boolean {
  const shaped = /^(\/|\.\.?\/|~\/)/.test(arg) || /\.(json|jsonc|toml)$/i.test(arg);
  return shaped && redactText(arg) === arg;
}

/** What wrap and unwrap take, for a sentence that refuses the argument given. */
const TAKES = `a host (${HOSTS.join(", ")}) or the path of an existing host file (such as .mcp.json, .vscode/mcp.json or ~/.codex/config.toml)`;

function targets(name: "wrap" | "unwrap", arg: string | undefined, cwd: string): HostFile[] {
  if (arg === undefined || (HOSTS as readonly string[]).includes(arg)) {
    const files = hostFiles((arg ?? "claude-code") as HostName, cwd).filter((f) => existsSync(f.file));
    if (files.length === 0)
      // named by the command, as its other refusals are, with what else it takes
      throw new UsageError(
        `${name}: no ${arg ?? "claude-code"} configuration found (looked in ${hostFiles(
          (arg ?? "claude-code") as HostName,
          cwd,
        )
          .map((f) => f.file)
          .join(
            ", ",
          )}); ${name} takes ${TAKES}${name === "wrap" ? "; nothing was written" : "; nothing was restored"}.`,
      );
    return files;
  }
  if (!existsSync(arg)) {
    const written = name === "wrap" ? "; nothing was written" : "; nothing was restored";
    if (plainlyAPath(arg))
      throw new UsageError(`${name}: ${resolve(cwd, arg)} does not exist; ${name} takes ${TAKES}${written}.`);
    // a mistyped host (`clade-code`) gets the one it most likely meant: naming a host repeats
    // nothing of the word, which stays unshown
    const meant = nearestName(arg, HOSTS);
    throw new UsageError(
      `${name}: the argument given is neither a host nor an existing file (it is not repeated, in case it is a secret typed in the wrong place${meant ? `; did you mean ${meant}?` : ""}); ${name} takes ${TAKES}${written}.`,
    );
  }
  return [hostFileFromPath(arg)];
}

/**
 * wrap's options given to unwrap: refused naming the command they belong to, not as an unknown
 * option whose hint ("a value that starts with '-' goes after '--'") sends the user the wrong way.
 */
function refuseWrapOptions(args: string[]): void {
  const end = args.indexOf("--");
  for (const a of end === -1 ? args : args.slice(0, end)) {
    const flag = a.split("=")[0]!;
    if (!["--dry-run", "--json", "--servers", "--label"].includes(flag)) continue;
    const dry =
      flag === "--dry-run"
        ? "; it has no dry run: FILE.portcullis-backup, beside the host file, is the file before its first wrap, to compare with"
        : "";
    throw new UsageError(
      `unwrap: ${flag} is an option of wrap, not of unwrap (unwrap takes HOST or FILE and --state-dir, and restores every entry wrap recorded for the file${dry}); nothing was written.`,
    );
  }
}

export async function wrapCommand(name: "wrap" | "unwrap", args: string[]): Promise<number> {
  if (name === "unwrap") refuseWrapOptions(args);
  const parsed = name === "wrap" ? parse(name, args, OPTIONS) : parse(name, args, UNWRAP_OPTIONS);
  const values: {
    "dry-run"?: boolean;
    json?: boolean;
    servers?: string;
    label?: string[];
    "state-dir"?: string;
    help?: boolean;
  } = parsed.values;
  const positionals = parsed.positionals;
  if (values.help) {
    process.stdout.write(`${WRAP_HELP}\n`);
    return 0;
  }
  if (positionals.length > 1)
    throw new UsageError(`${name}: one HOST or FILE at most (got ${positionals.length}).`);
  // Only a wrap that writes makes the state directory, and only once every file is planned and
  // found writable (below): a refusal says "nothing was written" and leaves nothing behind.
  // --dry-run writes nothing, and unwrap reads a record that is there or refuses.
  const stateDir = stateDirPath(values["state-dir"]);
  // the state directory the entries name, in the commands wrap prints: a bare 'portcullis init'
  // makes the default one (or $PORTCULLIS_HOME's), where a wrap given --state-dir finds no
  // keyring still. Named unless it is the default (stateDirFlagFor), one from $PORTCULLIS_HOME
  // included: the shell the command is pasted into may not have the variable.
  const dir = stateDirFlagFor(stateDir);
  // in the sentence's quotes, double when the directory itself needed single ones
  const doctor = `portcullis doctor${dir}`.includes("'")
    ? `"portcullis doctor${dir}"`
    : `'portcullis doctor${dir}'`;
  const only = values.servers
    ?.split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  // `--servers "$LIST"` with the variable unset wrapped nothing and said so, exit 0
  if (only?.length === 0)
    throw new UsageError(
      "wrap: --servers names no server; give the server keys separated by commas (--servers a,b), or leave it out for every server.",
    );
  const labels = labelOptions(values.label ?? []);
  // The flags' own mistakes are said before the host files are looked for: found after, a
  // malformed --label or an empty --servers run where no host file is was answered "no
  // claude-code configuration found", and fixing that only led to the typo.
  const files = targets(name, positionals[0], process.cwd());
  const launcher = {
    node: process.execPath,
    cli: fileURLToPath(new URL("./main.cjs", import.meta.url)),
    stateDir,
  };
  try {
    if (name === "unwrap") return unwrap(files, stateDir, positionals[0]);
    const options: WrapOptions = { only, labels };
    // Plan every file first: bad input in any of them writes nothing anywhere.
    checkServersNamed(files, only);
    checkServersNamed(files, [...labels.keys()], "--label");
    // a label for a server --servers leaves out would be dropped without a word
    const unwrapped = only ? [...labels.keys()].find((key) => !only.includes(key)) : undefined;
    if (unwrapped !== undefined) {
      const shown = serverKeyAsGiven(unwrapped);
      throw new UsageError(
        `wrap: --label names ${shown === null ? `a server (${NOT_SHOWN_KEY})` : `the server ${shown}`}, which --servers leaves out; add it to --servers, or leave its --label out.`,
      );
    }
    const planned = files.map((f) => planWrap(f, launcher, options));
    if (!values["dry-run"] && planned.some((p) => p.record !== null)) {
      for (const p of planned) if (p.record !== null) assertWritable(p.plan.host.file);
      resolveStateDir(values["state-dir"]);
    }
    const report: {
      host: string;
      file: string;
      wrapped: string[];
      leftAlone: WrapPlan["skipped"];
      refused: WrapPlan["refused"];
      credentialsInClear: { server: string; variables: string[] }[];
      headersInClear: { server: string; headers: string[] }[];
      labelHistory: { server: string; label: string; own: string; chosen: boolean; message: string }[];
    }[] = [];
    for (const f of files) {
      const plan = values["dry-run"] ? planWrap(f, launcher, options).plan : wrapFile(f, launcher, options);
      const inClear = credentialsLeftInClear(plan);
      const headersLeft = headersLeftInClear(plan);
      const history = plan.labelHistory.map((n) => ({
        server: n.key,
        label: n.label,
        own: n.own,
        chosen: n.chosen,
        message: labelHistoryLine(n, f, stateDir, values["dry-run"] === true),
      }));
      report.push({
        host: f.host,
        file: f.file,
        wrapped: plan.wrapped,
        leftAlone: plan.skipped,
        refused: plan.refused,
        credentialsInClear: inClear,
        headersInClear: headersLeft.map(({ server, headers }) => ({ server, headers })),
        labelHistory: history,
      });
      if (values.json) continue;
      if (values["dry-run"] && plan.before !== plan.after) process.stdout.write(shownDiff(plan, f));
      const verb = values["dry-run"] ? "would wrap" : "wrapped";
      say(`${f.file}: ${verb} ${shownKeys(plan.wrapped)}`);
      for (const s of plan.skipped) say(`  left alone: ${shownKey(s.key)} (${s.why})`);
      // named by the command, as its other refusals are; the rest of the file is wrapped
      for (const r of plan.refused)
        say(
          `portcullis wrap: ${values["dry-run"] ? "would not wrap" : "not wrapped"}: ${r.why}.`,
          process.stderr,
        );
      // "leaves alone" said no more: the way to put one behind portcullis is by hand
      const http = plan.skipped.filter((s) => leftAsHttp(s.why));
      if (http.length > 0)
        say(
          `  to guard ${shownKeys(http.map((s) => s.key))}: replace ${http.length === 1 ? "its entry" : "each entry"} by hand with one that runs portcullis with --url; ${doctor} gives the entry to write`,
        );
      for (const h of history) say(`  ${h.message}`);
      // wrap leaves an entry's env as it is: a credential there stays in clear in the host file.
      // The doctor named reads the state directory the entries name: its advice's `vault set`
      // must store the value in the vault their gateways read, not in the default one.
      for (const c of headersLeft)
        say(
          `  ${shownKey(c.server)} keeps ${c.headers.map((h) => quotedName(h)).join(", ")} in its "headers", in clear: every process of this user can read the host file; the vault keeps ${c.headers.length === 1 ? "it" : "them"} instead when the entry runs portcullis with --url and ${c.flags.join(" ")}, NAME a secret stored with vault set: ${doctor} says how`,
        );
      for (const c of inClear)
        say(
          `  ${shownKey(c.server)} ${values["dry-run"] ? "would keep" : "keeps"} ${c.variables.map((v) => quotedName(v)).join(", ")} in its "env", in clear: every process of this user can read the host file; ${doctor} says how to move ${c.variables.length === 1 ? "it" : "them"} to the vault`,
        );
    }
    // an entry refused for a key its host does not read: the others were wrapped, the exit says not all
    const refusedAny = report.some((r) => r.refused.length > 0);
    // the init last, in no quotes of the sentence's own, so that it pastes whole
    const init = keyringExists(stateDir) ? null : `portcullis init${dir}`;
    if (values.json) {
      // the same facts as the lines, for a script: no diff (its lines are the host file's own)
      const out = {
        dryRun: values["dry-run"] === true,
        stateDir,
        files: report,
        keyring: init === null,
        init,
      };
      process.stdout.write(`${printableJson(out)}\n`);
      return refusedAny ? EXIT_CHECK_FAILED : 0;
    }
    if (init !== null)
      say(`no keyring in ${stateDir} yet: before the host starts these servers, run: ${init}`);
    // a host reads its file when it starts its servers: the ones running now are not behind
    // portcullis until it starts them again, which nothing above says
    if (!values["dry-run"] && report.some((r) => r.wrapped.length > 0))
      say(
        `next: restart the host (or reconnect these servers in it) so that it starts them through portcullis; ${doctor} then lists their gateways`,
      );
    return refusedAny ? EXIT_CHECK_FAILED : 0;
  } catch (e) {
    if (e instanceof OnboardError) {
      // a host file's sentence ("FILE does not parse …") names no command: named by this one
      // ("portcullis wrap: FILE …"), as a portcullis.json's is by the command that read it
      const line = failureLine(e.message);
      say(line.startsWith("portcullis: ") ? failureLine(`${name}: ${e.message}`) : line, process.stderr);
      return EXIT_USAGE;
    }
    throw e;
  }
}

/**
 * The dry run's diff as printed. Its lines are the host file's own: the `env` beside the `args`
 * wrap rewrites holds tokens (Codex's `env = { GITHUB_PERSONAL_ACCESS_TOKEN = "ghp_…" }` is the
 * line after them, a one-line JSON entry holds them on the changed line), and what a dry run
 * prints ends up in terminals' scrollback and agents' transcripts. Values under secret-like names
 * and token-shaped strings are redacted (wrap leaves them as they are, so nothing is hidden of what
 * changes), and a character a terminal would act on is written as an escape, as `say` writes.
 */
function shownDiff(plan: { before: string; after: string }, host: HostFile): string {
  const hidden = secretWords(host, plan.before);
  // the file's name escaped before the lines are cut: a newline in it made a line of its own
  return lineDiff(plan.before, plan.after, safeText(host.file))
    .split("\n")
    .map((line) => safeText(redactText(hideWords(line, hidden))))
    .join("\n");
}

/**
 * The words of the servers' command lines and env values that are secrets though no line shows
 * it: a value after a secret-named flag sits in the next array element, often on the next line
 * (`"--password", "S"`), where a line's own text says nothing of it; a generated-looking value
 * after any flag (`--x a8Fk…`), or under any variable, is a key whatever its name. Each is judged
 * with the command-line classifier (redactArgv) and the generated-value one (looksGenerated),
 * and replaced by its redacted form wherever it stands as a string (hideWords).
 */
function secretWords(host: HostFile, text: string): Map<string, string> {
  const out = new Map<string, string>();
  const hide = (word: string, shown: string) => {
    if (word !== "" && word !== shown) out.set(word, shown);
  };
  let read: ReturnType<typeof readHostServers>;
  try {
    read = readHostServers(host, text);
  } catch {
    return out; // wrap said what is wrong with the file already
  }
  for (const { entry } of read.servers) {
    const args = Array.isArray(entry.args)
      ? entry.args.filter((a): a is string => typeof a === "string")
      : [];
    const shown = redactArgv(args);
    for (const [i, a] of args.entries()) hide(a, generatedNotAPath(a) ? REDACTED : shown[i]!);
    const env = entry.env;
    if (env && typeof env === "object" && !Array.isArray(env))
      for (const v of Object.values(env))
        if (typeof v === "string" && generatedNotAPath(v)) hide(v, REDACTED);
  }
  return out;
}

/**
 * A word the generated-value rule calls a key that is not the absolute path of something on this
 * machine. A server's script path reads as generated (`/home/dev2/node_modules/@modelcontextprotocol/
 * server-memory/dist/index.js`: a digit, a run of 16 letters, varied characters), and a dry run
 * that hides the very command it rewrites cannot be checked; a path that exists is no secret.
 */
function generatedNotAPath(word: string): boolean {
  return looksGenerated(word) && !(isAbsolute(word) && existsSync(word));
}

/**
 * `line` with each hidden word replaced where it stands as a whole string: `"word"` (JSON, and
 * TOML's basic strings, escaped as JSON escapes) or `'word'` (TOML's literal strings). A word is
 * an element of an array or a value, so it is always one; and a short secret (`--token abc`)
 * does not garble every `abc` of the file.
 */
function hideWords(line: string, hidden: Map<string, string>): string {
  let out = line;
  for (const [word, shown] of hidden) {
    out = out.split(JSON.stringify(word)).join(JSON.stringify(shown));
    out = out.split(`'${word}'`).join(`'${shown}'`);
  }
  return out;
}

/** --label KEY=LABEL, each LABEL one the gateway takes (LABEL_PATTERN: run refuses any other at every start). */
function labelOptions(values: string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const v of values) {
    const eq = v.lastIndexOf("=");
    const key = v.slice(0, eq);
    const label = v.slice(eq + 1);
    if (eq <= 0 || !LABEL_PATTERN.test(label))
      throw new UsageError(
        `wrap: --label takes KEY=LABEL, the LABEL one 'portcullis run --label' takes (${LABEL_RULE}; e.g. --label inventory=inventory-cursor).`,
      );
    const before = out.get(key);
    // which of the two was meant is not guessed, as for any option given two values
    if (before !== undefined && before !== label) {
      const shown = serverKeyAsGiven(key);
      throw new UsageError(
        `wrap: --label gives ${shown === null ? `one server (${NOT_SHOWN_KEY})` : `the server ${shown}`} two labels (${before} and ${label}); give one.`,
      );
    }
    out.set(key, label);
  }
  return out;
}

/**
 * Unwrap each file of the target. For a HOST, a file with no record is passed over (a project's
 * .mcp.json never wrapped beside a wrapped ~/.claude.json); only when none has one is it an
 * error. Exit 1 when an entry could not be restored: its record is kept and the line says what to do.
 */
/**
 * A host file's server key as wrap's lines show it: as it is when it reads as one name in a list
 * ("docs search" too), else quoted and escaped. An empty key was shown as nothing at all ("wrapped
 * nothing" of a file wrap had just edited), and a key with a comma read as two.
 */
function shownKey(key: string): string {
  const plain = key !== "" && key === key.trim() && !/[,"\\]/.test(key) && safeText(key) === key;
  return plain ? key : quotedName(key);
}

function shownKeys(keys: string[]): string {
  return keys.length === 0 ? "nothing" : keys.map(shownKey).join(", ");
}

function unwrap(files: HostFile[], stateDir: string, target: string | undefined): number {
  const byPath = target !== undefined && !(HOSTS as readonly string[]).includes(target);
  const recorded = byPath ? files : files.filter((f) => recordExists(f, stateDir));
  let stuck = false;
  let restoredAny = false;
  for (const f of recorded.length > 0 ? recorded : files.slice(0, 1)) {
    const r = unwrapFile(f, stateDir, byPath);
    restoredAny ||= r.how === "exact" || r.restored.length > 0;
    const what = r.how === "exact" ? "restored byte for byte" : `restored ${shownKeys(r.restored)}`;
    say(`${r.file}: ${what}`);
    // what the user added for portcullis alone is not carried over to the bare server: said, not silent
    for (const o of r.runOptionsDropped)
      say(
        `  ${shownKey(o.key)}: dropped with the wrap, the run options added since: ${o.options.join(", ")}`,
      );
    // the launcher was portcullis's, moved since wrap: restored all the same, and said
    for (const m of r.launcherMoved)
      say(
        `  ${shownKey(m.key)}: restored though its launcher is not the one wrap wrote (${m.moved.join("; ")}): it still runs portcullis's run with the recorded server after "--"`,
      );
    for (const d of r.dropped) say(`  nothing to restore: ${shownKey(d.key)} (${d.why})`);
    for (const e of r.elsewhere)
      say(`  still wrapped, from another project: ${e} (unwrap it there, or unwrap ${r.file})`);
    for (const s of r.stuck) {
      stuck = true;
      // named by the command, as its other failures are
      say(`portcullis unwrap: ${r.file}: not restored: ${s.todo}`, process.stderr);
    }
  }
  // as after wrap: the host runs what it read when it started its servers, the gateways here
  if (restoredAny)
    say(
      "next: restart the host (or reconnect these servers in it) so that it starts them without portcullis; until then it runs them through the gateways it started",
    );
  return stuck ? EXIT_CHECK_FAILED : 0;
}

/**
 * What wrap says of a label the store's history holds for another server (LabelHistoryNote): the
 * entry given the next free label, why, and how to file it under its own all the same; or, for a
 * label --label chose, that it is kept and what that mixes.
 */
function labelHistoryLine(n: LabelHistoryNote, f: HostFile, stateDir: string, dry: boolean): string {
  const own = quotedName(n.own);
  const history = `the store's history under ${own} (its epochs, catalog revisions, approvals and egress) is of another server, launched with another command, args or cwd`;
  const force = `--label ${shellWord(`${n.key}=${n.own}`)}`;
  if (n.chosen)
    return `warning: ${shownKey(n.key)} ${dry ? "would take" : "takes"} the label ${own}, as --label asks, though ${history}: the two are filed as one server (the next review compares this one with the other's last approved catalog)`;
  const keep = dry
    ? `give wrap ${force}`
    : `run ${unwrapCommand(f.file, stateDir)}, then wrap again with ${force}`;
  return `${shownKey(n.key)} ${dry ? "would get" : "gets"} the label ${quotedName(n.label)}, not ${own}: ${history}, and one label would mix the two; if it is that same server (moved or upgraded), to keep ${own}: ${keep}`;
}

/**
 * The HTTP entries wrap left alone whose own "headers" hold a credential in clear (by name;
 * src/onboard/doctorHeaders.ts): wrap said "left alone" and nothing of the token in the file,
 * where it names a wrapped entry's env credential.
 */
function headersLeftInClear(plan: WrapPlan): { server: string; headers: string[]; flags: string[] }[] {
  const entries = readServers(plan.host, plan.after);
  return plan.skipped
    .filter((s) => leftAsHttp(s.why) && entries[s.key] !== undefined)
    .map((s) => {
      const headers = headersInClear(entries[s.key]!);
      // run's vault form for each: only a secret's name on the command line, never its value
      return { server: s.key, headers, flags: headers.map((h) => headerSecretFlag(h, entries[s.key]!)) };
    })
    .filter((c) => c.headers.length > 0);
}

/**
 * The wrapped entries' env variables that hold a credential in clear (by name: the value is
 * neither printed nor compared; src/onboard/doctorEnv.ts), which wrap leaves where they are.
 */
function credentialsLeftInClear(plan: WrapPlan): { server: string; variables: string[] }[] {
  const entries = readServers(plan.host, plan.after);
  const out: { server: string; variables: string[] }[] = [];
  for (const server of plan.wrapped) {
    const env = entries[server]?.env;
    if (typeof env !== "object" || env === null || Array.isArray(env)) continue;
    const variables = Object.entries(env as Record<string, unknown>)
      .filter(([name, value]) => typeof value === "string" && credentialInClear(name, value))
      .map(([name]) => name);
    if (variables.length > 0) out.push({ server, variables });
  }
  return out;
}
