import type { CredentialSpec } from "./credentials.js";
import type { DeliveryMismatch } from "./deliveryMismatch.js";
import { holderStatus } from "./holder.js";

/**
 * Step 6 of the decision order, as the guard sees the vault: for the scopes a call needs, is
 * the vault unlocked, and does it hold a secret for each? Asked of the holder per call (a Unix
 * socket round trip), so `portcullis lock` stops the very next call in every gateway.
 */
export type VaultVerdict =
  | null
  | { error: "vault_locked"; scopes: string[]; retry?: string }
  | { error: "credential_missing"; scope: string; why: string; retry?: string };

export interface VaultPort {
  check(scopes: readonly string[]): Promise<VaultVerdict>;
}

/** The next step of a `vault_locked` refusal whose scopes include environment credentials. */
export function envLockedRetry(envScopes: readonly string[]): string {
  return (
    "ask a human to run 'portcullis unlock' and then to have the MCP client reconnect this server " +
    `(${envScopes.join(", ")} ${envScopes.length === 1 ? "is" : "are"} put in its environment only when it starts: ` +
    "a server started while the vault was locked keeps the placeholder), then retry"
  );
}

/**
 * `mismatch(scope)`: the stored policy's disagreement with the configuration, looked up when a
 * call meets one (the store's policies, as `run` read them at start, may have changed since).
 */
export function holderVault(
  stateDir: string,
  specs: readonly CredentialSpec[],
  mismatch: (scope: string) => DeliveryMismatch | null = () => null,
): VaultPort {
  const envDelivered = new Set(specs.filter((s) => s.deliver === "env").map((s) => s.secret));
  const httpDelivered = new Set(specs.filter((s) => s.deliver === "http").map((s) => s.secret));
  const refused = (scope: string, fallback: string): VaultVerdict => {
    const m = mismatch(scope);
    return m
      ? {
          error: "credential_missing",
          scope,
          why: m.why,
          retry: `ask a human to ${m.fix}, then to restart the gateway, and retry`,
        }
      : { error: "credential_missing", scope, why: fallback };
  };
  return {
    async check(scopes) {
      if (scopes.length === 0) return null;
      const status = await holderStatus(stateDir);
      if (!status.unlocked) {
        // An environment credential is put in the server's environment only when it is spawned:
        // a server started while the vault was locked keeps its placeholder after an unlock, so
        // an unlock alone would not make the retry work as the agent expects.
        const env = scopes.filter((s) => envDelivered.has(s));
        return env.length > 0
          ? { error: "vault_locked", scopes: [...scopes], retry: envLockedRetry(env) }
          : { error: "vault_locked", scopes: [...scopes] };
      }
      const held = new Set(status.scopes ?? []);
      const env = new Set(status.envScopes ?? []);
      for (const scope of scopes) {
        if (!held.has(scope))
          return { error: "credential_missing", scope, why: "no secret by that name in the vault" };
        if (envDelivered.has(scope) && !env.has(scope))
          return refused(
            scope,
            "the vault stores it for HTTP delivery only, and the configuration asks for the environment",
          );
        // the egress proxy asks the holder for HTTP release, which an env-stored secret never gets
        if (httpDelivered.has(scope) && !envDelivered.has(scope) && env.has(scope))
          return refused(
            scope,
            "the vault stores it for environment delivery only, and the configuration asks for HTTP delivery",
          );
      }
      return null;
    },
  };
}
