import { safeText } from "../catalog/text.js";

/**
 * Under onChange "report" the new code does not run until the server is started again: said
 * with the change, since "unchanged" alone leaves the human to guess how to get the new code.
 * Where restart is set depends on how this gateway was configured (reportNextStep).
 */
const REPORT_NEXT = "the new code runs when the server starts again: have your MCP client reconnect it";

/**
 * The other way to get the new code, where it takes effect: a gateway started with `-- COMMAND`
 * (as every entry `wrap` writes) reads no portcullis.json, so pointing it there would send the
 * human to edit a file this gateway never reads.
 */
export function reportNextStep(configFile: string | null, label: string): string {
  if (configFile === null)
    return `${REPORT_NEXT}, or give run --on-change restart (in a host's entry: in its args, before the "--")`;
  return `${REPORT_NEXT}, or set "onChange": "restart" for "${safeText(label)}" in ${safeText(configFile)}`;
}
