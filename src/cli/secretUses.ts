/**
 * Who uses each secret, as found from the working directory: the servers of the portcullis.json
 * (its credentials and a remote server's vault headers) and the host entries' `run --url …
 * --header-secret`. `vault list` shows them; `vault set` and `unlock` ask whether a secret is used
 * only as a header (onlyForHeaders), which needs no local CA. Apart from those commands because
 * all three read it.
 */
import { ConfigError, findConfig, loadConfigFile, type ServerConfig } from "../config/config.js";
import { type HostHeaderSecretUse, hostHeaderSecretUses } from "../onboard/hostHeaderSecrets.js";
import type { CredentialSpec } from "../vault/credentials.js";
import { type CredentialPlace, credentialPlaceOf } from "../vault/deliveryMismatch.js";

export interface Use {
  server: string;
  /** the environment variable of a `credentials` entry */
  env?: string;
  /** the header of a remote server's `headers` entry that takes the secret at each request */
  header?: string;
  /** http or env for a credential; "header" for a remote server's header */
  deliver: string;
  /**
   * the host file whose entry sends the header (`run --url … --header-secret`), the server being
   * its key there; absent for a use of the portcullis.json found from here
   */
  hostFile?: string;
  hosts: string[];
  /** when the server declares per-tool scopes: the tools that list this one (tools that declare none use every scope) */
  tools?: string[];
  /** the configured delivery is not the stored one: why the vault will never hand it out so, and the fix */
  mismatch?: string;
}

/**
 * Whether what is found from here uses a secret, and only as a remote server's header: the
 * portcullis.json's `headers`, and the host entries' `run --url … --header-secret` of this state
 * directory (hostHeaderSecretUses, as vault list reads them). The gateway puts a header's value
 * in the request itself, no egress proxy intercepts TLS for it, so storing it is no reason for a
 * local CA servers are told to trust. Any other case (no use found, a portcullis.json that does
 * not load, host files that cannot be read, a launched server's credential, a secret neither
 * names) keeps the CA made here: a launched server's HTTP credential needs it before its first
 * request, and a gateway without it tunnels HTTPS to declared hosts unread.
 */
export function onlyForHeaders(stateDir: string): (name: string) => boolean {
  // the files read once, whatever the number of secrets asked of
  const { uses, configProblem } = configuredUses();
  // a portcullis.json that does not load may use any secret for a launched server: no judging
  if (configProblem !== undefined) return () => false;
  let hostUses: HostHeaderSecretUse[] = [];
  try {
    hostUses = hostHeaderSecretUses(process.cwd(), stateDir);
  } catch {
    // not read: the host entries count for nothing, and the CA is made as before
  }
  return (name) => {
    const list = uses.get(name) ?? [];
    return (list.length > 0 || hostUses.some((u) => u.secret === name)) && list.every((u) => "header" in u);
  };
}

type ConfiguredUse =
  | { use: Use; spec: CredentialSpec; place: CredentialPlace }
  /** a remote server's vault header: its mismatch is judged by the holder's rule for headers */
  | { use: Use; header: { name: string; secret: string }; server: ServerConfig };

/**
 * Which servers of the portcullis.json found from here use each secret, and, when that file does
 * not load, why (its one sentence, naming the file and the key).
 */
export function configuredUses(): {
  uses: Map<string, ConfiguredUse[]>;
  /** the portcullis.json found from the working directory, or null */
  configFile: string | null;
  configProblem?: string;
} {
  const out = new Map<string, ConfiguredUse[]>();
  const file = findConfig(process.cwd());
  if (!file) return { uses: out, configFile: null };
  try {
    for (const server of loadConfigFile(file).values()) {
      const perTool = Object.entries(server.tools ?? {}).filter(([, t]) => t.credentials !== undefined);
      for (const c of server.credentialSpecs) {
        const list = out.get(c.secret) ?? [];
        const tools = perTool.filter(([, t]) => t.credentials!.includes(c.secret)).map(([name]) => name);
        list.push({
          use: {
            server: server.label,
            env: c.env,
            deliver: c.deliver,
            hosts: c.hosts,
            ...(perTool.length > 0 ? { tools } : {}),
          },
          spec: c,
          place: credentialPlaceOf(server),
        });
        out.set(c.secret, list);
      }
      // A remote server's headers take secrets from the vault too: without them a secret only a
      // header uses was listed as used by no server, which invites its removal.
      for (const h of server.remote?.headers ?? []) {
        if (!("secret" in h)) continue;
        const list = out.get(h.secret) ?? [];
        const host = new URL(server.remote!.url).host;
        list.push({
          use: { server: server.label, header: h.name, deliver: "header", hosts: [host] },
          header: { name: h.name, secret: h.secret },
          server,
        });
        out.set(h.secret, list);
      }
    }
  } catch (e) {
    // best effort: listing the secrets does not depend on the file
    const why = e instanceof ConfigError ? e.message : `${file}: ${(e as Error).message ?? String(e)}`;
    return { uses: new Map(), configFile: file, configProblem: why.replace(/\.$/, "") };
  }
  return { uses: out, configFile: file };
}
