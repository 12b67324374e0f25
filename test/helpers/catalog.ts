// A tool-list file for the catalog and modern fixtures (FIXTURE_CATALOG), written atomically
// so the fixture's polling never reads half a file.
import { join } from "node:path";
import { readJsonLines, removeDir, tempDir, writeJsonAtomic } from "./files.js";

/** A tool object as tools/list carries it (only name and inputSchema are required). */
export interface ToolDef {
  name: string;
  title?: string;
  description?: string;
  /** a JSON Schema; `properties`, when there, maps input names to their schemas */
  inputSchema: { properties?: Record<string, unknown>; [key: string]: unknown };
  outputSchema?: Record<string, unknown>;
  annotations?: Record<string, unknown>;
  [key: string]: unknown;
}

export interface CatalogRecord {
  tool: string;
  args: Record<string, unknown>;
  pid: number;
  at: string;
  /** modern.mjs only: which era the call was served in */
  era?: "modern" | "legacy";
}

export interface CatalogFile {
  dir: string;
  path: string;
  recordFile: string;
  /** FIXTURE_CATALOG, FIXTURE_RECORD and, when given, FIXTURE_PAGE_SIZE / FIXTURE_NOTIFY */
  env: Record<string, string>;
  /** replace the tool list (the fixture notifies list_changed within ~100 ms) */
  write(tools: ToolDef[]): void;
  /** the tools/call requests the fixture received, listed or not */
  records(): CatalogRecord[];
  cleanup(): void;
}

export function makeCatalog(
  tools: ToolDef[],
  options: { pageSize?: number; notify?: boolean } = {},
): CatalogFile {
  const dir = tempDir("portcullis-catalog-");
  const path = join(dir, "tools.json");
  const recordFile = join(dir, "record.jsonl");
  writeJsonAtomic(path, tools);
  const env: Record<string, string> = { FIXTURE_CATALOG: path, FIXTURE_RECORD: recordFile };
  if (options.pageSize !== undefined) env.FIXTURE_PAGE_SIZE = String(options.pageSize);
  if (options.notify === false) env.FIXTURE_NOTIFY = "0";
  return {
    dir,
    path,
    recordFile,
    env,
    write: (next) => writeJsonAtomic(path, next),
    records: () => readJsonLines<CatalogRecord>(recordFile),
    cleanup: () => removeDir(dir),
  };
}

/** `count` simple tools named `${prefix}_0` ... (an object schema with one string field). */
export function numberedTools(prefix: string, count: number): ToolDef[] {
  return Array.from({ length: count }, (_, i) => ({
    name: `${prefix}_${i}`,
    description: `Tool ${i} of ${prefix}.`,
    inputSchema: { type: "object", properties: { value: { type: "string" } } },
  }));
}

/** The seed's publish_preview before and after a rebuild that adds an optional `target`. */
export const PUBLISH_PREVIEW_V1: ToolDef = {
  name: "publish_preview",
  description: "Publish a preview build of a branch.",
  inputSchema: {
    type: "object",
    required: ["branch"],
    properties: { branch: { type: "string" } },
    additionalProperties: false,
  },
};

export const PUBLISH_PREVIEW_V2: ToolDef = {
  ...PUBLISH_PREVIEW_V1,
  inputSchema: {
    type: "object",
    required: ["branch"],
    properties: {
      branch: { type: "string" },
      target: { type: "string", enum: ["preview", "production"], default: "preview" },
    },
    additionalProperties: false,
  },
};

/** A destructive tool that a server may drop from its list but keep handling. */
export const DELETE_ENVIRONMENT: ToolDef = {
  name: "delete_environment",
  description: "Delete a deployment environment.",
  inputSchema: { type: "object", required: ["environment"], properties: { environment: { type: "string" } } },
  annotations: { destructiveHint: true },
};
