import { quotedCommand } from "../store/stateDir.js";
import { shellWord } from "../util/shellWord.js";
import type { CredentialSpec } from "./credentials.js";
import { envValueDigest, type Withheld } from "./delivery.js";
import type { DeliveryMismatch } from "./deliveryMismatch.js";
import { askHolder, holderStatus } from "./holder.js";

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

/**
 * The next step of a `vault_locked` refusal whose scopes include environment credentials. Every
 * command the agent is told to ask for carries the gateway's state directory when it is not the
 * default (quotedCommand): the human's terminal may not have the variable the host gave it.
 */
export function envLockedRetry(envScopes: readonly string[], stateDir?: string): string {
  return (
    `ask a human to run ${quotedCommand("unlock", stateDir)} and then to have the MCP client reconnect this server ` +
    `(${envScopes.join(", ")} ${envScopes.length === 1 ? "is" : "are"} put in its environment only when it starts: ` +
    "a server started while the vault was locked keeps the placeholder), then retry"
  );
}

/** Why the running server process holds a placeholder for an environment credential. */
const STARTED_WITHOUT: Record<Withheld["cause"], string> = {
  locked: "the vault was locked when it started",
  missing: "the vault held no such secret when it started",
  "not-env": "the vault stored it for HTTP delivery only when it started",
  nul: "its value holds a NUL byte, which no environment variable can carry",
};

/**
 * A call that needs an environment credential the running server process was started without:
 * the process holds a placeholder for as long as it runs, whatever the vault holds now (an unlock
 * or a `vault set` since changes nothing in its environment). Let through, the call would run
 * with the placeholder while its records name the credential as used; refused, the agent is told
 * the one step that gives the server the secret: start it again.
 */
function startedWithout(w: Withheld, stateDir: string): VaultVerdict {
  return {
    error: "credential_missing",
    scope: w.scope,
    why: `the server process started without it (${STARTED_WITHOUT[w.cause]}) and holds a placeholder in its environment for as long as it runs`,
    retry:
      w.cause === "nul"
        ? `ask a human to store it again without a NUL byte (${quotedCommand(`vault set ${w.scope} --deliver env`, stateDir)}), then to have the MCP client reconnect this server, and retry`
        : "ask a human to have the MCP client reconnect this server (environment credentials are given only when it starts), then retry",
  };
}

/**
 * A call that needs an environment credential the vault holds another value of than the one the
 * running server process was started with (stored again, or removed and stored again, since):
 * the process keeps the value it was given, which the human has taken away; let through, the call
 * would run with it while its records name the scope as if it held the vault's value.
 */
function startedWithOther(scope: string): VaultVerdict {
  return {
    error: "credential_missing",
    scope,
    why: "the server process holds the value the vault had when it started, and the vault holds another one now (stored again, or removed and stored again, since)",
    retry:
      "ask a human to have the MCP client reconnect this server (environment credentials are given only when it starts), then retry",
  };
}

/**
 * `mismatch(scope)`: the stored policy's disagreement with the configuration, looked up when a
 * call meets one (the store's policies, as `run` read them at start, may have changed since).
 * `spawnedWithout()`: the environment credentials the running server process was started
 * without (src/cli/agentRun.ts, trackEpochs), each with why.
 */
export function holderVault(
  stateDir: string,
  specs: readonly CredentialSpec[],
  mismatch: (scope: string) => DeliveryMismatch | null = () => null,
  spawnedWithout: () => readonly Withheld[] = () => [],
  /** a server reached by URL: the host (host:port) its header secrets are sent to */
  headerHost?: string,
  /** the SHA-256 of each environment value the running server process was started with, by scope */
  spawnedWith: () => Readonly<Record<string, string>> = () => ({}),
): VaultPort {
  const envDelivered = new Set(specs.filter((s) => s.deliver === "env").map((s) => s.secret));
  const httpDelivered = new Set(specs.filter((s) => s.deliver === "http").map((s) => s.secret));
  // the command that stores `scope` as the configuration delivers it (`vault set NAME` alone is refused)
  const store = (scope: string) =>
    quotedCommand(
      `vault set ${scope}${
        envDelivered.has(scope)
          ? " --deliver env"
          : [
              ...specs.filter((s) => s.secret === scope).flatMap((s) => s.hosts),
              // a header secret of a server reached by URL goes to that server's host
              ...(headerHost && !specs.some((s) => s.secret === scope) ? [headerHost] : []),
            ]
              .map((h) => ` --host ${shellWord(h)}`)
              .join("")
      }`,
      stateDir,
    );
  const unlock = quotedCommand("unlock", stateDir);
  // Whether the holder's value of a scope is the one given at spawn, by holder generation, scope
  // and spawn digest: asked again only after a set or an rm (or a new unlock) changed the generation.
  const sameAsSpawned = new Map<string, boolean>();
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
  const noSecret = (scope: string): VaultVerdict => ({
    error: "credential_missing",
    scope,
    why: "no secret by that name in the vault",
    retry: `ask a human to run ${store(scope)} and ${unlock}, then retry`,
  });
  const httpOnly = (scope: string): VaultVerdict =>
    refused(
      scope,
      "the vault stores it for HTTP delivery only, and the configuration asks for the environment",
    );
  const locked = (scopes: readonly string[]): VaultVerdict => ({
    error: "vault_locked",
    scopes: [...scopes],
    retry: `ask a human to run ${unlock}, then retry`,
  });
  return {
    async check(scopes) {
      if (scopes.length === 0) return null;
      const status = await holderStatus(stateDir);
      if (!status.unlocked) {
        // An environment credential is put in the server's environment only when it is spawned:
        // a server started while the vault was locked keeps its placeholder after an unlock, so
        // an unlock alone would not make the retry work as the agent expects. One started while
        // it was unlocked holds the value: an unlock is all its retry needs.
        const without = new Set(spawnedWithout().map((w) => w.scope));
        const env = scopes.filter((s) => envDelivered.has(s) && without.has(s));
        return env.length > 0
          ? { error: "vault_locked", scopes: [...scopes], retry: envLockedRetry(env, stateDir) }
          : locked(scopes);
      }
      const held = new Set(status.scopes ?? []);
      const env = new Set(status.envScopes ?? []);
      for (const scope of scopes) {
        if (!held.has(scope)) return noSecret(scope);
        if (envDelivered.has(scope) && !env.has(scope)) return httpOnly(scope);
        // the egress proxy asks the holder for HTTP release, which an env-stored secret never gets
        if (httpDelivered.has(scope) && !envDelivered.has(scope) && env.has(scope))
          return refused(
            scope,
            "the vault stores it for environment delivery only, and the configuration asks for HTTP delivery",
          );
        const without = envDelivered.has(scope) ? spawnedWithout().find((w) => w.scope === scope) : undefined;
        if (without) return startedWithout(without, stateDir);
      }
      const given = spawnedWith();
      for (const scope of scopes) {
        if (!envDelivered.has(scope) || !Object.hasOwn(given, scope)) continue;
        const digest = given[scope]!;
        const key = status.generation !== undefined ? `${status.generation}\0${scope}\0${digest}` : null;
        let same = key !== null ? sameAsSpawned.get(key) : undefined;
        if (same === undefined) {
          const r = await askHolder(stateDir, { op: "release", scope });
          // (the holder changed since its status was read: said as the status would say it now)
          if (r?.ok !== true || typeof r.value !== "string")
            return r?.error === "credential_missing"
              ? noSecret(scope)
              : r?.error === "not_env_delivered"
                ? httpOnly(scope)
                : locked(scopes);
          same = envValueDigest(r.value) === digest;
          if (key !== null) {
            if (sameAsSpawned.size >= 1024) sameAsSpawned.clear();
            sameAsSpawned.set(key, same);
          }
        }
        if (!same) return startedWithOther(scope);
      }
      return null;
    },
  };
}
