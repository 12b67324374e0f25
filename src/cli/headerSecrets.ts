import type { ServerConfig } from "../config/config.js";
import { quotedCommand } from "../store/stateDir.js";
import { shellWord } from "../util/shellWord.js";
import { credentialPlaceOf } from "../vault/deliveryMismatch.js";
import { hostMatches } from "../vault/egress/hosts.js";
import type { SecretPolicy } from "../vault/secrets.js";
import { NAME_READS_AS_VALUE, secretNameShown } from "./secretNameShown.js";

/**
 * Why a remote server's vault header could never be sent, read at start from the policies the
 * store holds (readable without the passphrase), as a sentence naming the file, the key and the
 * fix, never a value; null when every header secret could be released. The holder's rule for a
 * header (src/cli/runRemote.ts): a secret stored for HTTP delivery goes only to a host its
 * policy names, the URL's host:port matched as the egress proxy matches; one stored for the
 * environment may go anywhere. So a secret that is missing, or stored for other hosts than the
 * URL's (an edited `url` pointing elsewhere), stops `run` here rather than every request later.
 */
export function headerSecretProblem(
  server: ServerConfig,
  stored: ReadonlyMap<string, SecretPolicy>,
  stateDir: string,
): string | null {
  const remote = server.remote;
  if (!remote) return null;
  const url = new URL(remote.url);
  const place = credentialPlaceOf(server);
  const where = place.file ?? "the configuration";
  for (const h of remote.headers) {
    if (!("secret" in h)) continue;
    // a header given by --header-secret is named by the flag: no file holds it
    const named = h.fromFlag
      ? `--header-secret ${JSON.stringify(h.name)}`
      : `${where}: ${place.serverKey}.headers.${h.name}`;
    const policy = stored.get(h.secret);
    if (!policy) {
      const shown = secretNameShown(h.secret);
      if (shown === null)
        return `run: ${named} ${NAME_READS_AS_VALUE} of ${stateDir}; write the secret's name there, and store its value with ${quotedCommand(`vault set NAME --host ${shellWord(url.host)}`, stateDir)}.`;
      return `run: ${named} names the secret "${shown}", which is not in the vault of ${stateDir}; store it first with ${quotedCommand(`vault set ${shown} --host ${shellWord(url.host)}`, stateDir)}.`;
    }
    const wrongHost = headerHostMismatch(server, h, policy, stateDir);
    if (wrongHost) return `run: ${wrongHost}.`;
  }
  return null;
}

/**
 * Why the vault would never send `header`'s secret, stored under `policy`, to the remote server's
 * URL (a secret stored for HTTP delivery to other hosts), as a sentence without its full stop
 * naming the file, the key and the fix; null when it would. Shared by `run`, which stops on it,
 * and `vault list`, which warns of it under the secret.
 */
export function headerHostMismatch(
  server: ServerConfig,
  header: { name: string; secret: string; fromFlag?: true },
  policy: SecretPolicy,
  /** the state directory, named in the fix's command when it is not the default */
  stateDir?: string,
): string | null {
  const remote = server.remote;
  if (!remote || policy.deliver !== "http") return null;
  const url = new URL(remote.url);
  // compared by value, as the holder does at each request (`api.example.com.` is api.example.com)
  const dest = {
    host: url.hostname,
    port: Number(url.port || (url.protocol === "https:" ? 443 : 80)),
  };
  if (hostMatches(policy.hosts, dest)) return null;
  const place = credentialPlaceOf(server);
  const where = place.file ?? "the configuration";
  const urlKey = place.file ? `${place.serverKey}.url` : "--url";
  const named = header.fromFlag
    ? `--header-secret ${JSON.stringify(header.name)}`
    : `${where}: ${place.serverKey}.headers.${header.name}`;
  const hosts = [...policy.hosts, url.host].map((x) => ` --host ${shellWord(x)}`).join("");
  return `${named} sends the secret "${header.secret}" to ${url.host} (${urlKey}), but the vault releases it over HTTP only to ${policy.hosts.join(", ") || "no host"}; if that server is meant to have it, store it again with ${quotedCommand(`vault set ${header.secret}${hosts}`, stateDir)}, else correct ${urlKey}`;
}
