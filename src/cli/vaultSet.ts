/**
 * `portcullis vault set`: a secret stored or rotated with its delivery policy, under the vault
 * lock, the local CA made when HTTP delivery first needs it, and a running holder handed the new
 * value. Apart from the other subcommands: its flags, checks and writes are its own.
 */
import { safeText } from "../catalog/text.js";
import type { Store } from "../store/db.js";
import { caCertPath as caCertPathOf, ensureEgressCa, openEgressCa } from "../vault/egress/ca.js";
import { declaredHost, repeatedHost } from "../vault/egress/hosts.js";
import { askHolder } from "../vault/holder.js";
import {
  checkSecretName,
  checkSecretValue,
  putSecret,
  type SecretPolicy,
  secretNames,
  VaultError,
} from "../vault/secrets.js";
import { oneOf, parse } from "./args.js";
import { EXIT_OK, UsageError } from "./errors.js";
import { onlyForHeaders } from "./secretUses.js";
import { readStdinValue, typedValue } from "./secretValueInput.js";
import { lockVault, openExisting, unlockWithPassphrase } from "./vaultAccess.js";
import { VAULT_HELP } from "./vaultHelp.js";

export const SET_OPTIONS = {
  "from-stdin": { type: "boolean" },
  deliver: { type: "string" },
  host: { type: "string", multiple: true },
  help: { type: "boolean", short: "h" },
} as const;

/**
 * The subcommands read the state directory (resolved when first read: main.ts) only once their
 * flags are read, so that a mistyped flag is said before a missing state directory is.
 */
export async function vaultSet(args: string[], ctx: { stateDir: string }): Promise<number> {
  const { values, positionals: names } = parse("vault set", args, SET_OPTIONS);
  if (values.help) {
    process.stdout.write(`${VAULT_HELP}\n`);
    return EXIT_OK;
  }
  const fromStdin = values["from-stdin"] === true;
  const policy: SecretPolicy = {
    deliver: oneOf("vault set", "deliver", values.deliver, ["http", "env"] as const) ?? "http",
    hosts: (values.host ?? []).map(checkHost),
  };
  // by position, as checkHost says a host it refuses: the word may be the secret in the wrong place
  const twice = repeatedHost(policy.hosts);
  if (twice)
    throw new UsageError(
      `vault set: --host number ${twice.at + 1} is the same host as number ${twice.first + 1} (hosts are compared by value, as requests are: letter case, a trailing dot and how an address is written make no difference); give each host once.`,
    );
  // two words or more: said as such (not "give one", which reads as if none was given), and
  // neither repeated: the second may be the value, typed where it never belongs
  if (names.length > 1)
    throw new UsageError(
      `vault set: takes one secret NAME (${names.length} words were given, not shown); the value is never an argument: it is typed when asked, or read with --from-stdin.`,
    );
  if (names.length !== 1) throw new UsageError("vault set: give one secret NAME.");
  if (policy.deliver === "env" && policy.hosts.length > 0)
    throw new UsageError(
      "vault set: --host is for --deliver http (an env-delivered secret goes wherever the server sends it).",
    );
  if (policy.deliver === "http" && policy.hosts.length === 0)
    throw new UsageError(
      "vault set: a secret delivered over HTTP needs at least one --host HOST[:PORT] it may be sent to (or --deliver env).",
    );
  const name = checkSecretName(names[0]!);
  const stateDir = ctx.stateDir;
  const db = openExisting(stateDir);
  try {
    const dataKey = await unlockWithPassphrase(db, stateDir, `store the secret ${name}`, "vault set");
    try {
      const value = checkSecretValue(fromStdin ? await readStdinValue() : await typedValue(name));
      // An environment variable cannot hold a NUL byte: spawn() would throw at every start of
      // the server, with the value itself in its message.
      if (policy.deliver === "env" && value.includes("\0"))
        throw new VaultError(
          "the value holds a NUL byte, which no environment variable can carry; nothing was stored",
        );
      // One vault command at a time, from the store to the holder's answer (takeVaultLock): a
      // vault rm between the two would be undone in the holder by this put, two rotations would
      // leave the store and the holder each with another value, two first HTTP secrets two CAs.
      const release = await lockVault("vault set", stateDir);
      try {
        return await storeAndHand(db, stateDir, dataKey, name, policy, value);
      } finally {
        release();
      }
    } finally {
      dataKey.fill(0);
    }
  } finally {
    db.close();
  }
}

/** vault set's writes, under the vault lock: the store, the local CA, the running holder. */
async function storeAndHand(
  db: Store,
  stateDir: string,
  dataKey: Buffer,
  name: string,
  policy: SecretPolicy,
  value: string,
): Promise<number> {
  // A rotation while unlocked: the holder lets go of the old value first (a value rotated is
  // often one that leaked). Killed after this, the holder holds nothing under the name (vault
  // list says so; calls needing it are refused), never the old value beside a new one stored.
  if (secretNames(db).has(name)) await askHolder(stateDir, { op: "forget", scope: name });
  const { rotated } = putSecret(db, dataKey, name, policy, value);
  let egressCa: { cert: string; key: string } | undefined;
  if (policy.deliver === "http") {
    if (!onlyForHeaders(stateDir)(name) && (await ensureEgressCa(stateDir, dataKey)))
      process.stdout.write(
        // the state directory's name may hold a control character (init names it escaped too)
        `created the local CA servers will trust for HTTP delivery: ${safeText(caCertPathOf(stateDir))}\n`,
      );
    const { ca } = openEgressCa(stateDir, dataKey);
    if (ca) egressCa = { cert: ca.certPem, key: ca.keyPkcs8.toString("base64") };
    ca?.keyPkcs8.fill(0);
  }
  // A running holder learns the new value, so an unlocked vault needs no second unlock.
  await askHolder(stateDir, {
    op: "put",
    scope: name,
    value,
    ...policy,
    ...(egressCa ? { egressCa } : {}),
  });
  process.stdout.write(
    `secret ${name} ${rotated ? "rotated" : "stored"} (deliver ${policy.deliver}${policy.hosts.length ? ` to ${policy.hosts.join(", ")}` : ""})\n`,
  );
  if (value.length < SHORT_VALUE)
    process.stderr.write(
      `portcullis vault set: note: a value of under ${SHORT_VALUE} characters is scrubbed from everything a server says wherever it appears, so it can collide with ordinary text.\n`,
    );
  return EXIT_OK;
}

function checkHost(h: string, i: number): string {
  // By position, not by value: a word that is no host name may be the secret in the wrong place.
  const d = declaredHost(h);
  if ("problem" in d) {
    // a URL's host is said back (the flag as it should be written); no other part of the word is
    const instead = d.instead === undefined ? "" : `: --host ${d.instead}`;
    throw new UsageError(`vault set: --host number ${i + 1} ${d.problem}${instead}.`);
  }
  return d.host;
}

/** Values shorter than this are scrubbed too, but can collide with ordinary text (src/vault/scrub.ts). */
const SHORT_VALUE = 8;
