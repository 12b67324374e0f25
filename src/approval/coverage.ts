import { type Classification, diffCatalogs, type Tool, toolFingerprint } from "../catalog/index.js";
import type { ApprovedCall } from "../guard/guard.js";
import type { GrantRecord } from "./grants.js";

/**
 * Which of a run's session grants covers a call: one that holds every credential scope the call
 * uses and names the tool with the fingerprint it was approved at, or with an older version whose
 * change to the current definition is `narrows` or `cosmetic`. The grants whose older version of
 * the tool was changed in a way that expands its authority are returned apart (`expanded`): step
 * 2 refuses on them.
 */
export class GrantCoverage {
  /** classification of (grant, current fingerprint): a diff is computed once per version seen */
  private readonly classified = new Map<string, Classification>();

  /** The covering grant among `grants` for `call`, which uses credential scopes `scopes`. */
  match(
    grants: GrantRecord[],
    call: ApprovedCall,
    scopes: string[],
  ): { covering: GrantRecord | null; expanded: GrantRecord[] } {
    const usable = grants.filter((g) => scopes.every((s) => g.credentialScope.includes(s)));
    for (const g of usable) {
      if (g.toolScope.some((t) => t.name === call.tool && t.fingerprint === call.fingerprint)) {
        return { covering: g, expanded: [] };
      }
    }
    const expanded: GrantRecord[] = [];
    // A tool that left the catalog has no current definition: step 4 refuses it.
    if (!call.definition) return { covering: null, expanded };
    for (const g of usable) {
      if (!g.toolScope.some((t) => t.name === call.tool)) continue;
      const c = this.classify(g, call);
      if (c === "expands") expanded.push(g);
      else return { covering: g, expanded: [] };
    }
    return { covering: null, expanded };
  }

  /**
   * How the current definition differs from the approved one; unknown or unprovable is `expands`.
   * The approved definition is read from the grant's row, which the signature does not cover: it
   * counts only when its fingerprint is the one the human signed for that tool, so a definition
   * rewritten in the store (to make an expansion look cosmetic) proves nothing.
   */
  private classify(g: GrantRecord, call: ApprovedCall): Classification {
    const key = `${g.grant}\u0000${call.fingerprint}`;
    const hit = this.classified.get(key);
    if (hit) return hit;
    let c: Classification = "expands";
    const granted = signedDefinition(g, call.tool);
    if (granted && call.definition) {
      try {
        const diff = diffCatalogs([granted as Tool], [call.definition as Tool]);
        const entry = diff.entries.find((e) => e.kind === "modified" && e.tool === call.tool);
        c = entry && diff.entries.length === 1 ? entry.classification : "expands";
      } catch {
        c = "expands";
      }
    }
    this.classified.set(key, c);
    return c;
  }
}

/** The definition a grant approved for `tool`, when it is the one whose fingerprint was signed. */
function signedDefinition(g: GrantRecord, tool: string): Tool | null {
  const definition = Object.hasOwn(g.toolDefinitions, tool) ? (g.toolDefinitions[tool] as Tool) : null;
  if (definition === null) return null;
  const signed = g.toolScope.filter((t) => t.name === tool).map((t) => t.fingerprint);
  try {
    return signed.includes(toolFingerprint(definition)) ? definition : null;
  } catch {
    return null; // not canonical JSON: nothing the human can have signed
  }
}
