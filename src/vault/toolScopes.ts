/**
 * Which credential scopes a call of a tool uses: the ONE place this is decided. Step 6 checks
 * exactly these, the approval request, its grant (`credentialScope`), the review and the audit
 * name exactly these, and the egress proxy releases only these while the call is in flight.
 *
 * Configuration: `servers.<label>.tools.<name>.credentials: ["scope", …]`, each scope one of the
 * server's `credentials` (checked when the file is read). A tool that declares a list uses that
 * list (`[]`: none, so its calls need no unlocked vault). A tool that declares nothing uses every
 * scope of the server, which is also what every tool uses when no tool declares anything.
 */

/** `servers.<label>.tools`: per-tool settings (only `credentials` today). */
export type ToolsConfig = Record<string, { credentials?: string[] }>;

function declared(tools: ToolsConfig | undefined, toolName: string): string[] | undefined {
  if (!tools || !Object.hasOwn(tools, toolName)) return undefined;
  return tools[toolName]?.credentials;
}

/** The server's scopes: `credentials` (environment variable → scope), distinct and sorted. */
export function serverScopes(serverCredentials: Record<string, string> | null | undefined): string[] {
  return [...new Set(Object.values(serverCredentials ?? {}))].sort();
}

/** The scopes a call of `toolName` needs, releases and is granted; sorted, distinct. */
export function scopesForTool(
  serverCredentials: Record<string, string> | null | undefined,
  tools: ToolsConfig | undefined,
  toolName: string,
): string[] {
  const own = declared(tools, toolName);
  return own === undefined ? serverScopes(serverCredentials) : [...new Set(own)].sort();
}

/**
 * One line for the review when a call may use every scope because nothing narrower was
 * declared; null when the server has no credentials or the tool declares its own.
 */
export function toolScopeNote(
  serverCredentials: Record<string, string> | null | undefined,
  tools: ToolsConfig | undefined,
  toolName: string,
): string | null {
  if (serverScopes(serverCredentials).length === 0) return null;
  // a server reached by "url": its scopes are its headers' secrets (keyed `header NAME`,
  // src/supervisor/remoteHeaders.ts headerScopes), sent with every request, and it takes no
  // per-tool scopes (src/config/config.ts refuses them): the usual note sent the human to declare
  // what cannot be declared
  if (Object.keys(serverCredentials ?? {}).every((key) => key.startsWith("header ")))
    return "this server's headers carry these credentials with every request to it: every tool uses them";
  if (declared(tools, toolName) !== undefined) return null;
  const anyDeclared = Object.values(tools ?? {}).some((t) => t.credentials !== undefined);
  return anyDeclared
    ? `this tool declares no scopes of its own: it may use every credential of the server`
    : "this server declares no per-tool scopes: every tool may use every credential";
}
