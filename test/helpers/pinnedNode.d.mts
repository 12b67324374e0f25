// Types for pinnedNode.mjs (plain JS so that .ci/run can use it without a build).
export const NODE26: string;
export function pinnedNode(version?: string): string;
