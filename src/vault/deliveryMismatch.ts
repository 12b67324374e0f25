/**
 * A credential configured for one delivery whose secret the vault stores for the other, or for
 * HTTP to a host the vault's stored hosts do not release it to. The
 * vault's stored policy decides (src/vault/secrets.ts), so such a secret is never handed out as
 * portcullis.json asks: this says why, and the two ways out (store it again with the right flag,
 * or change the configuration's key), in the words of `run` at start, of the spawn's status line,
 * of the `credential_missing` refusal and of `vault list`. Never anything of the value.
 */

import { quotedCommand } from "../store/stateDir.js";
import { shellWord } from "../util/shellWord.js";
import type { CredentialSpec } from "./credentials.js";
import { hostMatches, parseDeclared } from "./egress/hosts.js";
import type { SecretPolicy } from "./secrets.js";

/** Where a credential is configured, for advice that names the file and the key. */
export interface CredentialPlace {
  /** the configuration file, or null for a server given on the command line */
  file: string | null;
  /** `servers.<label>` (or `mcpServers.<label>`) */
  serverKey: string;
}

export interface DeliveryMismatch {
  /** what is wrong, as a clause: "the vault stores … and … asks for …" */
  why: string;
  /** the exact fixes, as a clause: "store it … with '…', or write … in …" */
  fix: string;
}

export function credentialKey(place: CredentialPlace, spec: CredentialSpec): string {
  return `${place.serverKey}.credentials.${spec.env}`;
}

/** Why the vault will never deliver `spec`'s secret as configured, with the fix; null when delivery agrees. */
export function deliveryMismatch(
  spec: CredentialSpec,
  stored: SecretPolicy,
  place: CredentialPlace,
  /** the gateway's state directory: its commands name it when it is not the default */
  stateDir?: string,
): DeliveryMismatch | null {
  const cmd = (args: string) => quotedCommand(args, stateDir);
  const key = credentialKey(place, spec);
  const inFile = place.file ? ` in ${place.file}` : "";
  const name = spec.secret;
  if (spec.deliver === stored.deliver) {
    if (spec.deliver === "env") return null;
    // Both HTTP: the vault's own hosts decide where the holder releases it; a configured host it
    // does not allow gets the placeholder (deny first), which was said nowhere.
    const outside = spec.hosts.filter((h) => !coveredBy(stored.hosts, h));
    if (outside.length === 0) return null;
    const union = [...stored.hosts, ...outside.filter((h) => !stored.hosts.includes(h))];
    // narrowing the configuration first: storing it again widens where the secret may go
    return {
      why: `the vault releases "${name}" only to ${stored.hosts.join(", ")}, and ${key}${inFile} asks for it to be sent to ${outside.join(", ")} too (requests there would carry the placeholder)`,
      fix: `keep only ${stored.hosts.join(", ")} in the hosts at ${key}${inFile}, or, to have it released there too, store it again for every host it may go to with ${cmd(`vault set ${name} ${union.map((h) => `--host ${shellWord(h)}`).join(" ")}`)}`,
    };
  }
  if (spec.deliver === "env") {
    const hosts = JSON.stringify(stored.hosts.length ? stored.hosts : ["HOST"]);
    // Not as JSON: `"secret": "…"` reads as a credential to the redaction every log line goes
    // through (src/util/redact.ts), which would blank the very name the fix needs.
    const objectForm = `the object form, with secret ${JSON.stringify(name)} and hosts ${hosts}`;
    return {
      why: `the vault stores "${name}" for HTTP delivery only${stored.hosts.length ? ` (to ${stored.hosts.join(", ")})` : ""}, and ${key}${inFile} asks for the environment (the string form)`,
      fix: `store it for the environment with ${cmd(`vault set ${name} --deliver env`)}, or have it delivered over HTTP by writing ${key}${inFile} in ${objectForm}`,
    };
  }
  const hostFlags = spec.hosts.map((h) => `--host ${shellWord(h)}`).join(" ");
  return {
    why: `the vault stores "${name}" for environment delivery only, and ${key}${inFile} asks for HTTP delivery (to ${spec.hosts.join(", ")})`,
    fix: `store it for HTTP with ${cmd(`vault set ${name} ${hostFlags}`)}, or have the server take it from its environment by writing ${key}${inFile} as ${JSON.stringify(name)}`,
  };
}

/**
 * Whether a configured host ("h:p", or "h" for ports 443 and 80) is one the vault's hosts release
 * to, by the holder's own rule (hostMatches). A bare host is covered by its HTTPS port alone: a
 * vault narrowed to `h:443` keeps plain HTTP to the placeholder, which is what narrowing it meant,
 * and refusing to start for that (advising to widen it) would undo the narrowing.
 */
function coveredBy(allowed: readonly string[], configured: string): boolean {
  const { host, port } = parseDeclared(configured);
  return hostMatches(allowed, { host, port: port ?? 443 });
}

/**
 * The mismatch of each configured credential against the policies the store holds (readable
 * without the passphrase), looked up by scope. A secret that is not stored has no mismatch: it
 * is missing, which is said elsewhere.
 */
export function mismatchesOf(
  specs: readonly CredentialSpec[],
  stored: ReadonlyMap<string, SecretPolicy>,
  place: CredentialPlace,
  stateDir?: string,
): Map<string, DeliveryMismatch> {
  const out = new Map<string, DeliveryMismatch>();
  for (const spec of specs) {
    const policy = stored.get(spec.secret);
    const m = policy ? deliveryMismatch(spec, policy, place, stateDir) : null;
    if (m && !out.has(spec.secret)) out.set(spec.secret, m);
  }
  return out;
}

/** The place of a server's credentials: its file and its entry's key there. */
export function credentialPlaceOf(server: {
  label: string;
  configFile: string | null;
  configKey?: string;
}): CredentialPlace {
  return { file: server.configFile, serverKey: server.configKey ?? `servers.${server.label}` };
}
