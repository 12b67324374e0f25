import { createHash } from "node:crypto";
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { LaunchSpec } from "../../src/identity/index.js";

export const NODE = realpathSync(process.execPath);

export function tempDir(prefix: string): string {
  return realpathSync(mkdtempSync(join(tmpdir(), `portcullis-identity-${prefix}-`)));
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

export function put(root: string, rel: string, content: string, mode?: number): string {
  const p = join(root, rel);
  mkdirSync(dirname(p), { recursive: true });
  writeFileSync(p, content);
  if (mode !== undefined) chmodSync(p, mode);
  return p;
}

export function sha256File(p: string): string {
  return createHash("sha256").update(readFileSync(p)).digest("hex");
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Long enough for fresh files to leave the cache's racy window (RACY_MS = 2000). */
export const AGE_MS = 2200;

/** A small node server project with a dependency tree. */
export function makeProject(root: string): string {
  put(
    root,
    "package.json",
    JSON.stringify({ name: "demo-server", scripts: { start: "node dist/server.js" } }),
  );
  put(root, "package-lock.json", JSON.stringify({ name: "demo-server", lockfileVersion: 3 }));
  put(root, "dist/server.js", "// demo server\nprocess.stdin.resume();\n");
  put(root, "node_modules/pkg/package.json", JSON.stringify({ name: "pkg", main: "index.js" }));
  put(root, "node_modules/pkg/index.js", "module.exports = require('./lib/util.js');\n");
  put(root, "node_modules/pkg/lib/util.js", "module.exports = { answer: 42 };\n");
  put(root, "node_modules/@scope/deep/package.json", JSON.stringify({ name: "@scope/deep" }));
  put(root, "node_modules/@scope/deep/dist/esm/index.js", "export const deep = 1;\n");
  put(root, "node_modules/.package-lock.json", "{}\n");
  mkdirSync(join(root, "node_modules/.bin"), { recursive: true });
  symlinkSync("../pkg/index.js", join(root, "node_modules/.bin/pkg"));
  return root;
}

export function specFor(
  cwd: string,
  command: string,
  args: string[],
  extra: Partial<LaunchSpec> = {},
): LaunchSpec {
  return {
    serverLabel: "demo",
    command,
    args,
    cwd,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
    configDigest: "sha256:config",
    ...extra,
  };
}
