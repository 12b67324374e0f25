// What doctor says of a wrapped entry whose label wrap chose because of the store's history: the
// label the entry's key gives was another server's there, so the entry runs under the next free
// one (or, with --label, under that label all the same). Wrap said it once, on its own line;
// doctor says it for as long as the entry is wrapped, with the way back to its own label.
import { quotedName } from "../catalog/text.js";
import { stateDirFlagFor } from "../store/stateDir.js";
import { shellWord } from "../util/shellWord.js";
import type { HostFile } from "./hosts.js";
import { unwrapCommand } from "./wrap.js";
import type { RecordedEntry } from "./wrapRecord.js";

interface RelabelFinding {
  ok: boolean;
  what: string;
  next: string;
}

/** The finding for one recorded entry wrap labelled because of the store's history, or null. */
export function relabelFinding(
  f: HostFile,
  key: string,
  recorded: RecordedEntry | undefined,
  stateDir: string,
): RelabelFinding | null {
  const h = recorded?.labelHistory;
  if (recorded === undefined || h === undefined || typeof h.own !== "string" || typeof h.chosen !== "boolean")
    return null;
  const own = quotedName(h.own);
  const history = `the store's history under ${own} (its epochs, catalog revisions, approvals and egress) was another server's, launched with another command, args or cwd`;
  const dir = stateDirFlagFor(stateDir);
  const target = f.host === "file" ? shellWord(f.file) : f.host;
  if (h.chosen)
    return {
      ok: true,
      what: `${f.file}: ${quotedName(key)} runs under the label ${own}, as wrap's --label asked, though ${history}: the two are filed as one server`,
      next: `nothing, if they are the same server; if not, give this one its own label: ${unwrapCommand(f.file, stateDir)}, then portcullis wrap ${target} --servers ${shellWord(key)}${dir}`,
    };
  return {
    ok: true,
    what: `${f.file}: ${quotedName(key)} runs under the label ${quotedName(recorded.label)}, not its own ${own}: when it was wrapped, ${history}`,
    next: `nothing, if it is another server; if it is that same server (moved or upgraded), to keep ${own}: ${unwrapCommand(f.file, stateDir)}, then portcullis wrap ${target} --servers ${shellWord(key)} --label ${shellWord(`${key}=${h.own}`)}${dir}`,
  };
}
