import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Tool } from "../../src/catalog/index.js";
import { openStore, type Store } from "../../src/store/db.js";

/** Deep copy through JSON, the way a tool arrives from the wire. */
export function wire<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

export const readIssue: Tool = {
  name: "read_issue",
  title: "Read issue",
  description: "Read one issue of the current repository, with its labels and comments.",
  inputSchema: {
    type: "object",
    properties: { issue_id: { type: "string", description: "Issue number or key, e.g. PROJ-12" } },
    required: ["issue_id"],
    additionalProperties: false,
  },
  annotations: { readOnlyHint: true, openWorldHint: false },
};

export const repoSearch: Tool = {
  name: "repo_search",
  description: "Search the code of the current repository.",
  inputSchema: {
    type: "object",
    properties: {
      query: { type: "string", minLength: 1, maxLength: 200 },
      limit: { type: "integer", minimum: 1, maximum: 50, default: 10 },
    },
    required: ["query"],
  },
  annotations: { readOnlyHint: true },
};

export const createBranch: Tool = {
  name: "create_branch",
  description: "Create a branch from the default branch.",
  inputSchema: {
    type: "object",
    properties: { branch: { type: "string", pattern: "^[a-z0-9/_-]+$" } },
    required: ["branch"],
  },
};

export const postComment: Tool = {
  name: "post_comment",
  description: "Post a comment on an issue, visible to everyone who can see the issue.",
  inputSchema: {
    type: "object",
    properties: { issue_id: { type: "string" }, body: { type: "string", maxLength: 65536 } },
    required: ["issue_id", "body"],
  },
  annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: true },
};

export const deleteEnvironment: Tool = {
  name: "delete_environment",
  description: "Delete a deployment environment and everything deployed in it.",
  inputSchema: {
    type: "object",
    properties: { environment: { type: "string" } },
    required: ["environment"],
  },
  annotations: { destructiveHint: true },
};

export const searchLogs: Tool = {
  name: "search_logs",
  description: "Search the build logs of this project.",
  inputSchema: {
    type: "object",
    properties: { query: { type: "string", description: "Lucene query" } },
    required: ["query"],
  },
  annotations: { readOnlyHint: true },
};

export const queryLogs: Tool = {
  name: "query_logs",
  description: "Query build logs.",
  inputSchema: {
    type: "object",
    properties: {
      project: { type: "string" },
      query: { type: "string", description: "Lucene query" },
    },
    required: ["query"],
  },
  annotations: { readOnlyHint: true },
};

export const publishPreview: Tool = {
  name: "publish_preview",
  description: "Publish the current build as a preview deployment.",
  inputSchema: {
    type: "object",
    properties: { build_id: { type: "string" } },
    required: ["build_id"],
    additionalProperties: false,
  },
};

export const getRelease: Tool = {
  name: "get_release",
  description: "Get release details",
  inputSchema: {
    type: "object",
    properties: { tag: { type: "string" } },
    required: ["tag"],
  },
  annotations: { readOnlyHint: true },
};

export const deployService: Tool = {
  name: "deploy_service",
  description: "Deploy a service to an environment.",
  inputSchema: {
    type: "object",
    properties: {
      service: { type: "string" },
      environment: { type: "string", enum: ["dev", "staging"] },
      options: {
        type: "object",
        properties: {
          dry_run: { type: "boolean", default: true },
          replicas: { type: "integer", minimum: 1, maximum: 3 },
        },
        additionalProperties: false,
      },
    },
    required: ["service", "environment"],
    additionalProperties: false,
  },
};

/** A tool open to arbitrary edits in tests. */
// biome-ignore lint/suspicious/noExplicitAny: tests reach into arbitrary JSON
export type Editable = Tool & Record<string, any>;

/** Applies `f` to a deep copy of `t`. */
export function edit(t: Tool, f: (t: Editable) => void): Tool {
  const c = wire(t) as Editable;
  f(c);
  return c;
}

/** A store in a fresh temporary directory; `close()` removes it. */
export function tempStore(): { db: Store; dir: string; close: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "portcullis-catalog-"));
  const db = openStore(dir);
  return {
    db,
    dir,
    close: () => {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
