import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { keyringExists } from "../keyring/keyring.js";
import { lineDiff } from "../onboard/diff.js";
import { OnboardError } from "../onboard/document.js";
import { HOSTS, type HostFile, type HostName, hostFileFromPath, hostFiles } from "../onboard/hosts.js";
import { planWrap, unwrapFile, wrapFile } from "../onboard/wrap.js";
import { resolveStateDir, stateDirPath } from "../store/stateDir.js";
import { parse } from "./args.js";
import { EXIT_USAGE, UsageError } from "./errors.js";

export const WRAP_HELP = `usage: portcullis wrap [HOST|FILE] [--dry-run] [--servers a,b] [--state-dir DIR]
       portcullis unwrap [HOST|FILE] [--state-dir DIR]

Puts portcullis in front of every stdio server of a host's MCP configuration (wrap), or takes it
away again (unwrap: the original bytes when the file was not edited since, else only wrap's own
entries). HOST: ${HOSTS.join(", ")} (default: claude-code). FILE: a configuration file.
Each wrapped entry keeps its command, args, env and cwd (the command goes after '--'), gets a
label from its key, and names node, the portcullis CLI and the state directory by absolute path.
The original is kept beside the file as FILE.portcullis-backup.
  --dry-run        print the diff, write nothing
  --servers a,b    only these servers`;

const OPTIONS = {
  "dry-run": { type: "boolean" },
  servers: { type: "string" },
  "state-dir": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

function targets(arg: string | undefined, cwd: string): HostFile[] {
  if (arg === undefined || (HOSTS as readonly string[]).includes(arg)) {
    const files = hostFiles((arg ?? "claude-code") as HostName, cwd).filter((f) => existsSync(f.file));
    if (files.length === 0)
      throw new UsageError(
        `no ${arg ?? "claude-code"} configuration found (looked in ${hostFiles(
          (arg ?? "claude-code") as HostName,
          cwd,
        )
          .map((f) => f.file)
          .join(", ")}).`,
      );
    return files;
  }
  if (!existsSync(arg))
    throw new UsageError(`"${arg}" is neither a host (${HOSTS.join(", ")}) nor an existing file.`);
  return [hostFileFromPath(arg)];
}

export async function wrapCommand(name: "wrap" | "unwrap", args: string[]): Promise<number> {
  const { values, positionals } = parse(name, args, OPTIONS);
  if (values.help) {
    process.stdout.write(`${WRAP_HELP}\n`);
    return 0;
  }
  if (positionals.length > 1)
    throw new UsageError(`${name}: one HOST or FILE at most (got ${positionals.length}).`);
  // Only a wrap that writes makes the state directory: --dry-run writes nothing, and unwrap
  // reads a record that is there or refuses.
  const writes = name === "wrap" && !values["dry-run"];
  const stateDir = writes ? resolveStateDir(values["state-dir"]) : stateDirPath(values["state-dir"]);
  const files = targets(positionals[0], process.cwd());
  const only = values.servers
    ?.split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  const launcher = {
    node: process.execPath,
    cli: fileURLToPath(new URL("./main.js", import.meta.url)),
    stateDir,
  };
  try {
    if (name === "unwrap") {
      for (const f of files) {
        const r = unwrapFile(f, stateDir);
        const rest = r.leftAlone.length ? `; left alone (edited since): ${r.leftAlone.join(", ")}` : "";
        process.stdout.write(
          `${r.file}: ${r.how === "exact" ? "restored byte for byte" : `restored ${r.restored.join(", ") || "nothing"}`}${rest}\n`,
        );
      }
      return 0;
    }
    // Plan every file first: bad input in any of them writes nothing anywhere.
    for (const f of files) planWrap(f, launcher, only);
    for (const f of files) {
      const plan = values["dry-run"] ? planWrap(f, launcher, only).plan : wrapFile(f, launcher, only);
      if (values["dry-run"] && plan.before !== plan.after)
        process.stdout.write(lineDiff(plan.before, plan.after, f.file));
      const verb = values["dry-run"] ? "would wrap" : "wrapped";
      process.stdout.write(`${f.file}: ${verb} ${plan.wrapped.join(", ") || "nothing"}\n`);
      for (const s of plan.skipped) process.stdout.write(`  left alone: ${s.key} (${s.why})\n`);
    }
    if (!keyringExists(stateDir))
      process.stdout.write(
        `no keyring in ${stateDir} yet: run 'portcullis init' before the host starts these servers\n`,
      );
    return 0;
  } catch (e) {
    if (e instanceof OnboardError) {
      process.stderr.write(`portcullis: ${e.message}\n`);
      return EXIT_USAGE;
    }
    throw e;
  }
}
