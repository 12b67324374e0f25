// The envelope a 2026-07-28 client puts in every request's `_meta` (docs/protocol-eras.md): the
// era has no initialize, so its version, who it is and what it can do travel on each request.
// One builder, so that a test that is not about the envelope does not write it out by hand; a test
// that is (a missing key, another version, a hostile value) still writes its own. Also the
// subscription id the era's notifications carry in their own `_meta`, naming the listen they answer.
import type { WireMessage } from "./gateway.js";

/** A 2026-07-28 request's `_meta`: the client `clientInfo`, declaring `capabilities`. */
export function modernMeta(
  capabilities: Record<string, unknown> = {},
  clientInfo: { name: string; version: string } = { name: "x", version: "1" },
) {
  return {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": clientInfo,
    "io.modelcontextprotocol/clientCapabilities": capabilities,
  };
}

const SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId";

/** The listen a 2026-07-28 message came under: its `_meta`'s subscription id, if it has one. */
export function subscriptionOf(m: WireMessage): unknown {
  return (m.params as { _meta?: Record<string, unknown> } | undefined)?._meta?.[SUBSCRIPTION_ID];
}
