import { createHash, randomBytes } from "node:crypto";
import { CONSOLE_JS } from "./assets.js";
import { PASSKEY_JS } from "./passkeyScript.js";

/** console.js: the page's script, with the passkey ceremonies' half. */
export const CONSOLE_SCRIPT = CONSOLE_JS + PASSKEY_JS;

/**
 * Where this console process serves its own script and styles: under a path no earlier process
 * on the port used. A web server the agent ran on that port before (the console takes any free
 * port, or the one asked for) could have served `/static/console.js` with a long cache lifetime:
 * the browser would then run that script on the console's own origin without asking, and the
 * console's `no-store` would never be read. A path new to each run is never in the cache, and
 * the page also names each file's hash (`integrity`), which the browser checks.
 */
export const ASSET_TAG = randomBytes(8).toString("hex");

export function assetPath(name: string): string {
  return `/static/${ASSET_TAG}/${name}`;
}

/** The route of one asset of this run: its exact path. */
export function assetRoute(name: string): RegExp {
  return new RegExp(`^/static/${ASSET_TAG}/${name.replaceAll(".", "\\.")}$`);
}

/** Subresource Integrity of a served text (sha384, as browsers check it), computed once. */
export function integrity(text: string): string {
  let known = integrities.get(text);
  if (known === undefined) {
    known = `sha384-${createHash("sha384").update(text, "utf8").digest("base64")}`;
    integrities.set(text, known);
  }
  return known;
}

const integrities = new Map<string, string>();
