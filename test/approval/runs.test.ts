import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync, realpathSync, statSync } from "node:fs";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type ChainEntry,
  displayCommand,
  ExecutableDigests,
  MAX_CHAIN_DEPTH,
  processChain,
} from "../../src/approval/chain.js";
import { resolveMode } from "../../src/approval/grants.js";
import {
  chainDigest,
  endRun,
  endRunRows,
  getRun,
  recordEndedInStore,
  runEndedElsewhere,
  startRun,
} from "../../src/approval/runs.js";
import { DigestCache } from "../../src/identity/cache.js";
import type { Store } from "../../src/store/db.js";
import { removeDir, tempDir } from "../helpers/files.js";
import { openTestStore } from "./helpers.js";

const SUPPORTED = process.platform === "linux" || process.platform === "darwin";

let dir: string;
let db: Store;
beforeEach(() => {
  dir = tempDir("portcullis-runs-");
  db = openTestStore(dir);
});
afterEach(() => {
  db.close();
  removeDir(dir);
});

describe("process chains", () => {
  it.runIf(SUPPORTED)(
    "the chain of a real child process contains its parent's pid and executable",
    async () => {
      const child = spawn("sleep", ["30"], { stdio: "ignore" });
      try {
        await new Promise((r) => child.once("spawn", r));
        const chain = processChain(child.pid!);
        expect(chain[0]!.pid).toBe(child.pid);
        expect(chain[0]!.ppid).toBe(process.pid);
        expect(chain[0]!.command).toBe("sleep 30");
        const parent = chain[1]!;
        expect(parent.pid).toBe(process.pid);
        expect(realpathSync(parent.executable!)).toBe(realpathSync(process.execPath));
        expect(parent.sha256).toBe(
          `sha256:${createHash("sha256").update(readFileSync(process.execPath)).digest("hex")}`,
        );
        expect(parent.startTime).toMatch(/\S/);
        expect(chain.length).toBeLessThanOrEqual(MAX_CHAIN_DEPTH);
        expect(new Set(chain.map((e) => e.pid)).size).toBe(chain.length);
      } finally {
        child.kill();
      }
    },
  );

  it.runIf(SUPPORTED)("a reused pid is a different chain: the start time is part of the digest", () => {
    const chain = processChain(process.pid);
    const moved = chain.map((e, i) => (i === 0 ? { ...e, startTime: `${e.startTime}-later` } : e));
    expect(chainDigest(chain)).toBe(chainDigest(processChain(process.pid)));
    expect(chainDigest(moved)).not.toBe(chainDigest(chain));
    // the command line is for people: it does not change the identity
    expect(chainDigest(chain.map((e) => ({ ...e, command: "something else" })))).toBe(chainDigest(chain));
  });

  it("digests are cached by (path, size, mtime) in the store", () => {
    const digests = new ExecutableDigests(db);
    const d = digests.digest(process.execPath);
    expect(d).toMatch(/^sha256:[0-9a-f]{64}$/);
    const row = db.prepare("SELECT sha256 FROM executable_digests WHERE path = ?").get(process.execPath) as {
      sha256: string;
    };
    expect(row.sha256).toBe(d);
    // a second reader trusts the stored digest while size and mtime match
    db.prepare("UPDATE executable_digests SET sha256 = 'sha256:cached' WHERE path = ?").run(process.execPath);
    expect(new ExecutableDigests(db).digest(process.execPath)).toBe("sha256:cached");
    db.prepare("UPDATE executable_digests SET mtime_ms = mtime_ms - 1 WHERE path = ?").run(process.execPath);
    expect(new ExecutableDigests(db).digest(process.execPath)).toBe(d);
  });

  it("a digest missing from the store is read through the gateway's digest cache, and only while the file is the one cached", () => {
    const exe = realpathSync(process.execPath);
    const cache = new DigestCache(null);
    const st = statSync(exe);
    const planted = "f".repeat(64);
    cache.storeFile(
      exe,
      { size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, ino: st.ino, sha: planted },
      Date.now(),
    );
    expect(new ExecutableDigests(db, cache).digest(exe)).toBe(`sha256:${planted}`);
    // the cache read through is no more trusted than the cache: another inode is not that file
    const other = new DigestCache(null);
    other.storeFile(
      exe,
      { size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, ino: st.ino + 1, sha: planted },
      Date.now(),
    );
    const real = new ExecutableDigests(null, other).digest(exe);
    expect(real).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(real).not.toBe(`sha256:${planted}`);
  });

  it("command lines hide secret-looking values", () => {
    expect(
      displayCommand(["node", "server.js", "--api-key", "abc123", "--token=xyz", "GITHUB_TOKEN=ghp_1"]),
    ).toBe("node server.js --api-key [redacted] --token=[redacted] GITHUB_TOKEN=[redacted]");
    expect(displayCommand(["claude", "--model", "opus"])).toBe("claude --model opus");
  });

  it("command lines never show a JSON blob or a long argument, only their size", () => {
    const blob = JSON.stringify({ AWS_SECRET_ACCESS_KEY: "wJalrXUtnFEMI" });
    const long = `sk-${"x".repeat(150)}`;
    const shown = displayCommand(["backend", "--env", blob, long, "ok"]);
    expect(shown).not.toContain("wJalrXUtnFEMI");
    expect(shown).not.toContain("sk-x");
    expect(shown).toBe(
      `backend --env "[${blob.length}-char JSON argument]" "[${long.length}-char argument]" ok`,
    );
  });
});

describe("runs", () => {
  it.runIf(SUPPORTED)("startRun persists the chain of the gateway's parent; endRun ends it", () => {
    const run = startRun(db, "inventory-local", { fromPid: process.pid });
    expect(run.run).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(run.chain[0]!.pid).toBe(process.pid);
    const stored = getRun(db, run.run)!;
    expect(stored.chainDigest).toBe(run.chainDigest);
    // stored as a record of the run (getRun does not read it back: RunRow)
    const chainJson = db.prepare("SELECT chain_json FROM runs WHERE run = ?").pluck().get(run.run);
    expect(JSON.parse(chainJson as string)).toEqual(run.chain);
    expect(stored.gatewayPid).toBe(process.pid);
    expect(stored.gatewayAlive).toBe(true);
    endRun(db, run);
    expect(getRun(db, run.run)!.endedAt).not.toBeNull();
    expect(getRun(db, run.run)!.gatewayAlive).toBe(false);
    const other = startRun(db, "inventory-local", { fromPid: process.pid });
    expect(other.run).not.toBe(run.run);
  });
});

describe("a run's end by this process", () => {
  // A gateway's own end of its run is no end by another process; a run this process ended by id
  // (as abandoned.ts ends a gone gateway's run) is not its own, and must not be taken for one.
  const chain: ChainEntry[] = [
    {
      pid: 1,
      ppid: null,
      startTime: "1",
      startedAt: null,
      executable: "/bin/agent",
      sha256: null,
      command: "agent",
    },
  ];
  const now = () => new Date().toISOString();

  it("is known on the run it serves only: an end of the same id by endRunRows is another process's", () => {
    const served = startRun(db, "inventory-local", { chain });
    // another process's way of ending it (by id, as a gone gateway's): this run object never ended it
    expect(endRunRows(db, served.run, now(), "gateway_gone")).toBe(true);
    expect(runEndedElsewhere(db, served)).toMatchObject({ reason: "gateway_gone", recorded: true });

    const own = startRun(db, "inventory-local", { chain });
    endRun(db, own);
    expect(own.endedHere).toBe(true);
    expect(runEndedElsewhere(db, own)).toBeNull();
    expect(recordEndedInStore(db, own, now())).toBe(false);
    // the same run read as a fresh object (another process serving it would hold its own): ended elsewhere
    expect(runEndedElsewhere(db, { ...own, endedHere: undefined })).toMatchObject({
      reason: null,
      recorded: false,
    });
  });
});

describe("resolveMode", () => {
  it("takes the tool's own mode, else the default, else session", () => {
    const cfg = { default: "per-call" as const, tools: { lookup: "none" as const } };
    expect(resolveMode(cfg, "lookup")).toBe("none");
    expect(resolveMode(cfg, "adjust")).toBe("per-call");
    expect(resolveMode({ default: "session", tools: {} }, "x")).toBe("session");
    expect(resolveMode(undefined, "x")).toBe("session");
    // prototype names are tool names like any other
    expect(resolveMode(cfg, "constructor")).toBe("per-call");
    expect(resolveMode(cfg, "__proto__")).toBe("per-call");
  });

  it("gives a tool named like a listed one the stricter of that entry and the default", () => {
    const cfg = { default: "none" as const, tools: { deploy: "per-call" as const, lookup: "none" as const } };
    for (const name of ["Deploy", "DEPLOY", "deploy\u00ad", "de\u200bploy", "deploy\u{e0041}", "\uff44eploy"])
      expect(resolveMode(cfg, name), JSON.stringify(name)).toBe("per-call");
    // controls, separators, accents and full case folding read as nothing or as their letters
    for (const name of ["deploy\u0000", "dep\u2028loy", "dep\u00a0loy", "de\u0301ploy", "dep loy"])
      expect(resolveMode(cfg, name), JSON.stringify(name)).toBe("per-call");
    expect(resolveMode({ default: "none", tools: { kill: "session" } }, "K\u0130LL")).toBe("session");
    expect(resolveMode({ default: "none", tools: { strasse: "session" } }, "STRA\u00dfE")).toBe("session");
    // a letter of another script that looks Latin is not folded: a name that is not plain ASCII
    // may imitate any entry, and gets the strictest of them
    const two = {
      default: "none" as const,
      tools: { deploy: "per-call" as const, strasse: "session" as const },
    };
    expect(resolveMode(two, "depl\u043ey")).toBe("per-call");
    expect(resolveMode(two, "\u0455trasse")).toBe("per-call");
    expect(resolveMode({ default: "session", tools: { lookup: "none" } }, "l\u043eokup")).toBe("session");
    // never laxer than the default: a look-alike of a "none" tool under a stricter default
    const strict = { default: "per-call" as const, tools: { lookup: "none" as const } };
    expect(resolveMode(strict, "Lookup")).toBe("per-call");
    // its own entry still decides, and another name is another tool
    expect(resolveMode({ default: "none", tools: { deploy: "per-call", Deploy: "session" } }, "Deploy")).toBe(
      "session",
    );
    expect(resolveMode(cfg, "deploy2")).toBe("none");
  });

  it("is never laxer for an unlisted name than for the listed names it reads as (property)", () => {
    const modes = fc.constantFrom("none" as const, "session" as const, "per-call" as const);
    // what a renderer shows as nothing or as a space, or a program's compare folds away
    const invisible = fc.constantFrom(
      "",
      "\u00ad",
      "\u200b",
      "\u200d",
      "\u2060",
      "\ufeff",
      "\u{e0020}",
      "\u0000",
      "\u001b",
      "\u0085",
      "\u00a0",
      "\u2028",
      "\u2029",
      "\u3000",
      "\u034f",
      "\u3164",
      "\ufe0f",
      "\u0301",
    );
    // the letter as it is, upper-cased, full-width, or with its accent as one code point
    const letterForm = fc.constantFrom("same", "upper", "fullwidth", "composed");
    const formOf = (c: string, form: string): string => {
      if (form === "upper") return c.toUpperCase();
      if (form === "fullwidth" && c !== "_") return String.fromCharCode(c.charCodeAt(0) + 0xfee0);
      if (form === "composed" && "aeiou".includes(c)) return `${c}\u0301`.normalize("NFC");
      return c;
    };
    fc.assert(
      fc.property(
        fc.stringMatching(/^[a-z_]{1,12}$/),
        modes,
        modes,
        fc.array(fc.tuple(letterForm, invisible), { minLength: 1, maxLength: 13 }),
        (name, listed, byDefault, marks) => {
          // the name with letters in other forms and invisible characters slipped in
          const chars = [...name];
          const alike = chars
            .map((c, i) => `${formOf(c, marks[i]?.[0] ?? "same")}${marks[i]?.[1] ?? ""}`)
            .join("");
          const cfg = { default: byDefault, tools: { [name]: listed } };
          const got = resolveMode(cfg, alike);
          const rank = { none: 0, session: 1, "per-call": 2 };
          if (alike === name) return got === listed;
          return rank[got] === Math.max(rank[listed], rank[byDefault]);
        },
      ),
    );
  });

  it("gives a tool not listed the strictest entry when its name is not plain ASCII, else its own or the default (property)", () => {
    const modes = fc.constantFrom("none" as const, "session" as const, "per-call" as const);
    const rank = { none: 0, session: 1, "per-call": 2 };
    fc.assert(
      fc.property(
        fc.dictionary(fc.stringMatching(/^[a-z_]{1,8}$/), modes, { minKeys: 1, maxKeys: 5 }),
        modes,
        fc.stringMatching(/^[a-z0-9_]{1,8}$/),
        fc.string({ unit: "binary", minLength: 1, maxLength: 3 }),
        (tools, byDefault, base, other) => {
          const cfg = { default: byDefault, tools };
          const strictest = Math.max(rank[byDefault], ...Object.values(tools).map((m) => rank[m]));
          // a name with a character outside printable ASCII: as if it imitated every entry
          const foreign = [...other].some((c) => c.codePointAt(0)! < 0x21 || c.codePointAt(0)! > 0x7e);
          const named = `${base}${other}`;
          if (foreign && !Object.hasOwn(tools, named)) expect(rank[resolveMode(cfg, named)]).toBe(strictest);
          // a plain ASCII name that reads as no entry (another case of none): the default
          if (!Object.keys(tools).some((t) => t === base.toLowerCase()))
            expect(resolveMode(cfg, base.toUpperCase())).toBe(byDefault);
        },
      ),
    );
  });
});
