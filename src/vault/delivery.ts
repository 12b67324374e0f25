import { createHash } from "node:crypto";
import type { CredentialSpec } from "./credentials.js";
import { askHolder } from "./holder.js";
import type { ReleasedValues } from "./scrub.js";

/** What a credential's variable holds whenever the server does not hold its secret. */
export function placeholderFor(spec: CredentialSpec): string {
  return `portcullis-placeholder:${spec.secret}`;
}

export interface EnvDelivery {
  /** variable → placeholder: the environment the execution record digests */
  placeholders: Record<string, string>;
  /**
   * Asked at each spawn: the secrets of `deliver: "env"` scopes, while the vault is unlocked
   * (`env`), and what that spawn was given (`credentials`). Nothing of it is kept here: under
   * `--listen` one delivery serves every session's spawns, and what one process got is carried
   * with its own epoch (LinkGeneration.spawnCredentials), never read back as "the last spawn's".
   */
  spawnEnv(): Promise<{ env: Record<string, string>; credentials: SpawnCredentials }>;
}

/** The scopes one spawn put in the server's environment, and those it could not, with why. */
export interface SpawnCredentials {
  released: readonly string[];
  withheld: readonly Withheld[];
  /**
   * The SHA-256 of each value put in the environment, by scope: a call that needs the scope is
   * refused once the vault holds another value under it (rotated, or removed and stored again),
   * since the process keeps the one it was given (src/vault/port.ts). Never written anywhere.
   */
  digests?: Readonly<Record<string, string>>;
}

/** What SpawnCredentials.digests holds for a value. */
export function envValueDigest(value: string): string {
  return createHash("sha256").update(value, "utf8").digest("hex");
}

/**
 * Why a scope's value was not put in the environment: no vault holder answered (`locked`),
 * no secret by that name (`missing`), the secret is stored for HTTP delivery (`not-env`), or its
 * value holds a NUL byte, which no environment variable can carry (`nul`).
 */
export interface Withheld {
  scope: string;
  cause: "locked" | "missing" | "not-env" | "nul";
}

/**
 * `deliver: "env"`: the value is put in the server's environment when it is spawned, and only
 * while the vault is unlocked. The server then holds it for its whole life (and any process of
 * the same user can read a process's environment): weaker than per-call release, and said so.
 */
export function envDelivery(
  stateDir: string,
  specs: readonly CredentialSpec[],
  /** every value released is added here, so that the server's output is scrubbed of it */
  released?: ReleasedValues,
): EnvDelivery {
  const placeholders = Object.fromEntries(specs.map((s) => [s.env, placeholderFor(s)]));
  const env = specs.filter((s) => s.deliver === "env");
  const scrub = released;
  return {
    placeholders,
    async spawnEnv() {
      const out: Record<string, string> = {};
      const released: string[] = [];
      const withheld: Withheld[] = [];
      const digests: Record<string, string> = {};
      for (const s of env) {
        const r = await askHolder(stateDir, { op: "release", scope: s.secret });
        if (r?.ok === true && typeof r.value === "string" && r.value.includes("\0")) {
          // spawn() would throw with the value itself in its message (an "internal error" that
          // printed it, and a gateway that never starts): the server gets the placeholder
          withheld.push({ scope: s.secret, cause: "nul" });
        } else if (r?.ok === true && typeof r.value === "string") {
          out[s.env] = r.value;
          released.push(s.secret);
          digests[s.secret] = envValueDigest(r.value);
          scrub?.add(s.secret, r.value);
        } else
          withheld.push({
            scope: s.secret,
            cause:
              r?.error === "not_env_delivered"
                ? "not-env"
                : r?.error === "credential_missing"
                  ? "missing"
                  : "locked",
          });
      }
      return { env: out, credentials: { released, withheld, digests } };
    },
  };
}

/**
 * The status line written when a server is spawned with env-delivered credentials, and its
 * reading by `portcullis status`: one format, in one place.
 */
const ENV_HELD = /^credentials in the environment of epoch (\S+): (.+) \(held by the server for its life\)$/;

export function envHeldLine(epoch: string, scopes: readonly string[]): string {
  return `credentials in the environment of epoch ${epoch}: ${scopes.join(", ")} (held by the server for its life)`;
}

export function parseEnvHeldLine(line: string): { epoch: string; scopes: string[] } | null {
  const m = ENV_HELD.exec(line);
  return m ? { epoch: m[1]!, scopes: m[2]!.split(", ") } : null;
}
