/**
 * The line a failed command writes last: "portcullis run: …" when its sentence starts with the
 * command's name ("run: …"), "portcullis: …" otherwise. Sentences name their command in the
 * message itself (a gateway's start, approve, a vault subcommand), and every writer of a failure
 * goes through here, so the line reads the same whoever wrote it.
 */
const COMMANDS = new Set([
  "run",
  "status",
  "catalog",
  "init",
  "passphrase",
  "rotate-keys",
  "audit",
  "passkey",
  "demo",
  "wrap",
  "unwrap",
  "doctor",
  "console",
  "drill",
  "vault",
  "unlock",
  "lock",
  "egress",
  "approvals",
  "approve",
  "deny",
  "grants",
  "revoke",
  "help",
]);

/** The options that stand for a command (`portcullis --help run` is `portcullis help run`). */
const COMMAND_FLAGS = new Set(["--help", "-h"]);

/** Longest "command subcommand" a sentence starts with ("catalog diff"). */
const LONGEST = 24;

export function failureLine(sentence: string): string {
  // a command and at most one subcommand ("vault set: ") or flag ("approve --next: "), lower
  // case, then a colon and a space
  const end = sentence.slice(0, LONGEST + 2).indexOf(": ");
  const words = end > 0 ? sentence.slice(0, end).split(" ") : [];
  const named =
    words.length >= 1 &&
    words.length <= 2 &&
    (COMMANDS.has(words[0]!) || (words.length === 1 && COMMAND_FLAGS.has(words[0]!))) &&
    words.every((w, i) => {
      // a command named in full (`rotate-keys` holds a hyphen)
      if (i === 0 && (COMMAND_FLAGS.has(w) || COMMANDS.has(w))) return true;
      const flag = i === 1 && w.startsWith("--");
      const name = flag ? w.slice(2) : w;
      return name.length > 0 && [...name].every((c) => (c >= "a" && c <= "z") || (flag && c === "-"));
    });
  if (!named) return `portcullis: ${sentence}`;
  return `portcullis ${sentence.slice(0, end)}: ${sentence.slice(end + 2)}`;
}
