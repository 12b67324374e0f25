import { looksGenerated, redactText } from "../util/redact.js";

/**
 * A vault secret's name as a refusal may quote it, or null when it reads as a secret value: a
 * token pasted where its name goes (`--header-secret 'X-Api-Key=sk-live-…'`,
 * `"headers": {"X": {"secret": "ghp_…"}}`) is a valid-looking name the vault lacks, and the
 * sentence saying so must not print it back (stderr reaches the host's logs and the agent).
 */
export function secretNameShown(name: string): string | null {
  return redactText(name) !== name || looksGenerated(name) ? null : name;
}

/** The refusal's part for a secret the vault lacks whose name reads as a value: never quoted. */
export const NAME_READS_AS_VALUE =
  "names a secret by a name that reads as a secret value (not shown: a credential pasted where the vault secret's name goes?), which is not in the vault";
