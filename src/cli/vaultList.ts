/**
 * `portcullis vault list`: the stored secrets without the passphrase (read-only when the store
 * cannot be written), who uses each (secretUses.ts, and the host entries' `--header-secret`), a
 * delivery that disagrees with the stored one, and what the running holder holds against what
 * the store lists. Apart from the other subcommands: it only reads, and its output is its own.
 */
import { quotedName, safeText } from "../catalog/text.js";
import { KeyringMissingError } from "../keyring/keyringErrors.js";
import { keyringExists } from "../keyring/keyringRead.js";
import { type HostHeaderSecretUse, hostHeaderSecretUses } from "../onboard/hostHeaderSecrets.js";
import { openStoreToRead } from "../store/db.js";
import { quotedCommand } from "../store/stateDir.js";
import { printableJson } from "../util/printableJson.js";
import { deliveryMismatch } from "../vault/deliveryMismatch.js";
import { holderStatus } from "../vault/holder.js";
import { listSecrets, type SecretPolicy } from "../vault/secrets.js";
import { parse } from "./args.js";
import { EXIT_OK } from "./errors.js";
import { headerHostMismatch } from "./headerSecrets.js";
import { sayReadWithoutWriting } from "./readWithoutWriting.js";
import { configuredUses, type Use } from "./secretUses.js";
import { VAULT_HELP } from "./vaultHelp.js";

export const LIST_OPTIONS = { json: { type: "boolean" }, help: { type: "boolean", short: "h" } } as const;

export async function vaultList(args: string[], ctx: { stateDir: string }): Promise<number> {
  const { values } = parse("vault list", args, LIST_OPTIONS, false);
  if (values.help) {
    process.stdout.write(`${VAULT_HELP}\n`);
    return EXIT_OK;
  }
  const json = values.json === true;
  const stateDir = ctx.stateDir;
  // only reads: a store on a full disk, or under a file size limit, is read all the same, saying so
  if (!keyringExists(stateDir)) throw new KeyringMissingError(stateDir);
  const db = openStoreToRead(stateDir);
  try {
    sayReadWithoutWriting(db, "vault list");
    const { uses, configFile, configProblem } = configuredUses();
    // said, not hidden: "no server ... uses it" and no delivery warning would be untrue
    if (configProblem)
      process.stderr.write(
        `portcullis vault list: warning: ${safeText(configProblem)}; who uses each secret, and any delivery mismatch, cannot be shown.\n`,
      );
    // the host entries that send a secret as a header with `run --url … --header-secret`
    const hostUses = hostUsesOrSaid(stateDir);
    const status = await holderStatus(stateDir);
    // Who uses a secret is known only from a portcullis.json that loads: with none found, or one
    // that does not load, it is not known (null), which --json says as the text does, not as an
    // empty list ("no server uses it").
    const known = configFile !== null && configProblem === undefined;
    // What the running holder holds against what the store lists: they differ only after a
    // command was interrupted between the two (vault rm, vault set while unlocked).
    const held = status.unlocked ? new Set(status.scopes ?? []) : null;
    const stored = listSecrets(db);
    const storedNames = new Set(stored.map((s) => s.name));
    const heldNotStored = held === null ? [] : [...held].filter((n) => !storedNames.has(n)).sort();
    const secrets = stored.map((s) => ({
      ...s,
      held: held === null ? null : held.has(s.name),
      // not known (null) only when neither a portcullis.json that loads nor a host entry says
      usedBy:
        known || hostUses.some((u) => u.secret === s.name)
          ? [
              ...(uses.get(s.name) ?? []).map((u): Use => {
                if ("header" in u) {
                  const m = headerHostMismatch(u.server, u.header, s, stateDir);
                  return m ? { ...u.use, mismatch: m } : u.use;
                }
                const m = deliveryMismatch(u.spec, s, u.place, stateDir);
                return m ? { ...u.use, mismatch: `${m.why}; ${m.fix}` } : u.use;
              }),
              ...hostUses.filter((u) => u.secret === s.name).map((u) => hostUse(u, s, stateDir)),
            ]
          : null,
    }));
    if (json) {
      const config = { file: configFile, problem: configProblem ?? null };
      process.stdout.write(
        `${printableJson({ unlocked: status.unlocked, until: status.until ?? null, config, secrets, heldNotStored })}\n`,
      );
      return EXIT_OK;
    }
    process.stdout.write(status.unlocked ? `vault unlocked until ${status.until}\n` : "vault locked\n");
    if (secrets.length === 0)
      process.stdout.write(
        `no secret stored; add one with ${quotedCommand("vault set NAME --host HOST", stateDir)} (or --deliver env)\n`,
      );
    // Names, hosts and tool names come from the store and portcullis.json: terminal-safe.
    const t = (v: unknown) => safeText(String(v));
    for (const s of secrets) {
      const how = s.deliver === "env" ? "deliver env" : `deliver http to ${s.hosts.map(t).join(", ")}`;
      const used = (s.usedBy ?? []).map(
        (u) =>
          `${t(u.server)}${u.hostFile !== undefined ? ` in ${t(u.hostFile)}` : ""} (${u.header !== undefined ? `header ${t(u.header)}, sent` : `${t(u.env)}, ${t(u.deliver)}`}${u.hosts.length ? ` to ${u.hosts.map(t).join(", ")}` : ""}${
            u.tools
              ? `; tools ${u.tools.length ? u.tools.map(t).join(", ") : "(none by name)"} and any that declare no scopes`
              : ""
          })`,
      );
      process.stdout.write(
        `${t(s.name)}  ${how}  ${s.bytes} bytes  created ${t(s.createdAt)}${s.rotatedAt ? `  rotated ${t(s.rotatedAt)}` : ""}\n` +
          `  used by: ${used.length ? used.join("; ") : configProblem ? "not known (the portcullis.json found here does not load)" : configFile === null ? "not known (no portcullis.json found from here)" : "no server in the portcullis.json found here"}\n`,
      );
      // a use the vault will never serve as configured: said under it, with the fix
      for (const u of s.usedBy ?? []) if (u.mismatch) process.stdout.write(`  warning: ${t(u.mismatch)}\n`);
      if (s.held === false)
        process.stdout.write(
          `  warning: the running vault holder does not hold it (a command storing or removing it was interrupted): calls that need it are refused; ${quotedCommand("unlock", stateDir)} again hands it over, ${t(quotedCommand(`vault rm ${s.name}`, stateDir))} finishes a removal\n`,
        );
    }
    for (const name of heldNotStored)
      process.stdout.write(
        `warning: the running vault holder still releases ${t(name)}, which the vault no longer lists (its removal was interrupted): ${t(quotedCommand(`vault rm ${name}`, stateDir))} ends that\n`,
      );
    return EXIT_OK;
  } finally {
    db.close();
  }
}

/**
 * The host entries' `--header-secret` uses (hostHeaderSecretUses), or none, said on stderr, when
 * they could not be read: listing the secrets does not depend on them.
 */
function hostUsesOrSaid(stateDir: string): HostHeaderSecretUse[] {
  try {
    return hostHeaderSecretUses(process.cwd(), stateDir);
  } catch (e) {
    process.stderr.write(
      `portcullis vault list: warning: the host files found from here could not be read for the secrets their entries send as headers (${safeText((e as Error | null)?.message ?? String(e))}); those uses are not shown.\n`,
    );
    return [];
  }
}

/**
 * A host entry's `--header-secret` as vault list shows it: the entry's key and file, the header
 * and the URL's host, with the warning run stops on when the vault would never send the secret
 * there (stored for other hosts), the entry named by file and key.
 */
function hostUse(u: HostHeaderSecretUse, policy: SecretPolicy, stateDir: string): Use {
  const use: Use = {
    server: u.key,
    header: u.header,
    deliver: "header",
    hosts: [new URL(u.server.remote!.url).host],
    hostFile: u.file,
  };
  const m = headerHostMismatch(
    u.server,
    { name: u.header, secret: u.secret, fromFlag: true },
    policy,
    stateDir,
  );
  return m ? { ...use, mismatch: `${u.file}: server ${quotedName(u.key)}: ${m}` } : use;
}
