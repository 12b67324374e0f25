/**
 * The `MCP-Protocol-Version` header of a request on the HTTP front. The standard (2025-06-18)
 * says a server answers 400 to a version it does not support, and assumes 2025-03-26 when the
 * header is absent: an absent header is never refused (clients before 2025-06-18 send none).
 */

/** Legacy-era versions: what the v1 SDK supports (`SUPPORTED_PROTOCOL_VERSIONS`, 1.32.2). */
export const LEGACY_PROTOCOL_VERSIONS: readonly string[] = [
  "2025-11-25",
  "2025-06-18",
  "2025-03-26",
  "2024-11-05",
  "2024-10-07",
];

/** Modern-era versions: what the v2 SDK supports (`SUPPORTED_MODERN_PROTOCOL_VERSIONS`, 2.4.0). */
export const MODERN_PROTOCOL_VERSIONS: readonly string[] = ["2026-07-28"];

/**
 * Why a request's `MCP-Protocol-Version` cannot be served, or null. A legacy session takes a
 * legacy version or the one its initialize negotiated (the server behind may know a version the
 * list does not); a modern request takes a modern version only.
 */
export function protocolVersionProblem(
  header: string | undefined,
  era: "legacy" | "modern",
  negotiated: string | null,
): string | null {
  if (header === undefined) return null;
  const version = header.trim();
  const supported = era === "legacy" ? LEGACY_PROTOCOL_VERSIONS : MODERN_PROTOCOL_VERSIONS;
  if (supported.includes(version) || (negotiated !== null && version === negotiated)) return null;
  const listed = [
    ...supported,
    ...(negotiated !== null && !supported.includes(negotiated) ? [negotiated] : []),
  ];
  return `Bad Request: Unsupported protocol version: ${JSON.stringify(header).slice(0, 80)} (supported versions: ${listed.join(", ")})`;
}
