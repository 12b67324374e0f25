import type { ServerConfig } from "../config/config.js";
import { quotedCommand } from "../store/stateDir.js";
import { shellWord } from "../util/shellWord.js";
import { credentialKey, credentialPlaceOf, deliveryMismatch } from "../vault/deliveryMismatch.js";
import type { SecretPolicy } from "../vault/secrets.js";
import { headerSecretProblem } from "./headerSecrets.js";
import { NAME_READS_AS_VALUE, secretNameShown } from "./secretNameShown.js";

/**
 * Why `run` refuses to start a server whose configuration names vault secrets, as one sentence
 * (`run: FILE: credentials.X names the secret "s", which is not in the vault of DIR; store it
 * first with 'portcullis vault set s --deliver env'.`), or null. Every credential scope must have
 * a secret in the vault (names are readable without the passphrase): a typo or a forgotten `vault
 * set` is an error at start, naming the key and the file, not a refusal at the first call. So is a
 * secret stored for the other delivery (its policy is readable too): the vault would never hand it
 * out as configured. A remote server's vault headers are held to the same, by the rule the
 * holder applies to them (headerSecretProblem): a header secret stored for other hosts than the
 * URL's is never sent. A secret removed or re-stored while the gateway runs is still refused per
 * call (`credential_missing`). Here, apart from serve.ts, so that doctor says what the gateway a
 * host starts would (src/onboard/doctorLabels.ts) without loading the gateway.
 */
export function secretsProblem(
  server: ServerConfig,
  stored: ReadonlyMap<string, SecretPolicy>,
  stateDir: string,
): string | null {
  const place = credentialPlaceOf(server);
  for (const spec of server.credentialSpecs) {
    const policy = stored.get(spec.secret);
    if (!policy) {
      const where = server.configFile ?? "the configuration";
      const how = `${spec.deliver === "env" ? " --deliver env" : spec.hosts.map((h) => ` --host ${shellWord(h)}`).join("")}`;
      const shown = secretNameShown(spec.secret);
      if (shown === null)
        return `run: ${where}: ${credentialKey(place, spec)} ${NAME_READS_AS_VALUE} of ${stateDir}; write the secret's name there, and store its value with ${quotedCommand(`vault set NAME${how}`, stateDir)}.`;
      return `run: ${where}: ${credentialKey(place, spec)} names the secret "${shown}", which is not in the vault of ${stateDir}; store it first with ${quotedCommand(`vault set ${shown}${how}`, stateDir)}.`;
    }
    const mismatch = deliveryMismatch(spec, policy, place, stateDir);
    if (mismatch) return `run: ${mismatch.why}; ${mismatch.fix}.`;
  }
  // a remote server's vault headers: the same checks, by the holder's rule for headers
  return headerSecretProblem(server, stored, stateDir);
}

/** Whether the server's configuration names any vault secret (secretsProblem has anything to check). */
export function namesSecrets(server: ServerConfig): boolean {
  return server.credentialSpecs.length > 0 || (server.remote?.headers.some((h) => "secret" in h) ?? false);
}
