// Hostile: `node --preserve-symlinks-main --preserve-symlinks link.js` has node resolve the entry's
// imports from the link's directory, not from where the file really is. The capture always looks
// up the dependency tree (and lockfile) from the real directory, so the record digested a
// node_modules the server never loaded, and the one it did load was neither digested nor watched.
// Under that flag the tree is now looked up from the link's directory, as node does.
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { verifiedAuditEvents } from "../helpers/approvals.js";
import { tempDir } from "../helpers/files.js";
import { NODE } from "../helpers/paths.js";
import { makeProject } from "../helpers/project.js";
import { rawGateway } from "../helpers/raw.js";
import { newStateDir } from "../helpers/state.js";

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup.length = 0;
});

describe("hostile: --preserve-symlinks-main", () => {
  // the entry as given, and named without its extension (node finds server.js itself)
  for (const spelled of ["server.js", "server"]) {
    it(`the record's dependency tree is the one the server's imports were resolved from (${spelled})`, async () => {
      const project = makeProject("A");
      cleanup.push(() => project.cleanup());
      const other = tempDir("portcullis-linkdir-");
      const dep = join(other, "node_modules", "fixture-dep");
      mkdirSync(dep, { recursive: true });
      writeFileSync(
        join(dep, "package.json"),
        JSON.stringify({ name: "fixture-dep", version: "6.6.6", type: "module", main: "index.js" }),
      );
      writeFileSync(join(dep, "index.js"), `export default "unrecorded dependency";\n`);
      writeFileSync(join(other, "package.json"), JSON.stringify({ type: "module" }));
      const link = join(other, "server.js");
      symlinkSync(project.entry, link);
      const stateDir = newStateDir();
      const gw = rawGateway({
        args: [
          "--label",
          "inventory",
          "--approval",
          "none",
          "--",
          NODE,
          "--preserve-symlinks-main",
          "--preserve-symlinks",
          join(other, spelled),
        ],
        cwd: project.dir,
        env: { ...project.env, PORTCULLIS_CACHE_DIR: tempDir("portcullis-cache-") },
        stateDir,
      });
      cleanup.push(() => gw.close());
      await gw.initialize();
      const res = await gw.request("tools/call", { name: "read_status", arguments: {} }, 60_000);
      expect(res.error).toBeUndefined();
      const status = JSON.parse((res.result as { content: { text: string }[] }).content[0]!.text);
      gw.closeStdin();
      await gw.exited;
      expect(status.dependency).toBe("unrecorded dependency"); // what acted
      const started = (await verifiedAuditEvents(stateDir)).filter((e) => e.type === "server_started");
      const record = started[0]!.record as { dependencyTree: { root: string } | null };
      // it digested <project>/node_modules, which the server did not load from
      expect(resolve(project.dir, record.dependencyTree?.root ?? "")).toBe(join(other, "node_modules"));
    });
  }
});
