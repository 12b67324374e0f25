import { quotedName, safeText } from "../catalog/text.js";
import { consoleLine, doctor } from "../onboard/doctor.js";
import { HOSTS, hostFiles } from "../onboard/hosts.js";
import { printableJson } from "../util/printableJson.js";
import { parse } from "./args.js";
import { EXIT_CHECK_FAILED } from "./errors.js";

export const DOCTOR_HELP = `usage: portcullis doctor [--json] [--state-dir DIR]

The state directory in use and why, the keyring, running gateways and their hosts' process chains,
the host configurations found and which of their servers are wrapped, versions, and a next step
for each finding. Exit 1 when something is wrong.
  --json   the same as one JSON object on standard output ("ok", "stateDir", "keyring",
           "gateways", "console", "hosts", "versions", and "findings", each with "ok", "what"
           and "next"), exit 1 as well when something is wrong`;

/** What a listed entry is, as the listing's note says it. */
const KIND_WORDS = {
  stdio: "a stdio entry",
  http: "an HTTP entry",
  unusable: "an entry the host cannot start",
} as const;

export async function doctorCommand(args: string[]): Promise<number> {
  const { values } = parse(
    "doctor",
    args,
    { json: { type: "boolean" }, "state-dir": { type: "string" }, help: { type: "boolean", short: "h" } },
    false,
  );
  if (values.help) {
    process.stdout.write(`${DOCTOR_HELP}\n`);
    return 0;
  }
  const r = doctor(values["state-dir"], process.cwd());
  const bad = r.findings.some((f) => !f.ok);
  if (values.json) {
    // paths and keys as printable escapes (the JSON decodes to the same text)
    process.stdout.write(`${printableJson({ ok: !bad, ...r })}\n`);
    return bad ? EXIT_CHECK_FAILED : 0;
  }
  // Labels, host process command lines and host-file keys are not portcullis's own words.
  const t = (v: unknown) => safeText(String(v));
  const out: string[] = [];
  out.push(
    `state directory  ${t(r.stateDir.path)}  (from the ${r.stateDir.why}${r.stateDir.mode ? `, mode ${t(r.stateDir.mode)}` : ""})`,
  );
  out.push(`keyring          ${r.keyring ? "present" : "missing or unusable (see the findings)"}`);
  out.push(`console          ${t(consoleLine(r.console))}`);
  out.push(
    `versions         node ${r.versions.node}, portcullis ${r.versions.portcullis}, SQLite ${r.versions.sqlite ?? "(no store yet)"}`,
  );
  out.push(`gateways         ${r.gateways.length === 0 ? "none running" : ""}`);
  for (const g of r.gateways) {
    out.push(`  ${t(g.label)}  pid ${g.pid}  epoch ${t(g.epoch ?? "-")}`);
    if (g.unseen) out.push(`    host chain: not readable from here (${t(g.unseen)})`);
    for (const c of g.hostChain) out.push(`    host chain: ${t(c)}`);
  }
  // none found: where they were looked for, so that a HOME or XDG_CONFIG_HOME other than the
  // user thought is seen (wrap names them too when it finds none)
  out.push(r.hosts.length === 0 ? `host files       none found (looked in ${t(lookedIn())})` : "host files");
  for (const h of r.hosts) {
    out.push(`  ${h.host}  ${t(h.file)}`);
    // an HTTP entry, or one the host cannot start, is not "not wrapped": wrap leaves it alone;
    // one whose url is a --listen front of this state directory is guarded, through the front
    // a mistyped key or "type" is said as such: wrap refuses the entry until it is corrected
    const state = (s: (typeof h.servers)[number]) =>
      s.wrapped
        ? "wrapped"
        : s.mistyped
          ? "mistyped"
          : s.front !== undefined
            ? "via front"
            : s.kind === "http"
              ? "http"
              : s.kind === "unusable"
                ? "unusable"
                : "not wrapped";
    const through = (s: (typeof h.servers)[number]) =>
      s.mistyped && !s.wrapped
        ? `  (${KIND_WORDS[s.kind]} with a mistyped key or "type", which wrap refuses: see the findings)`
        : s.front === undefined
          ? ""
          : `  (behind portcullis's --listen front, label ${t(quotedName(s.front))})`;
    for (const s of h.servers) out.push(`    ${state(s).padEnd(11)}  ${t(s.key)}${through(s)}`);
    if (h.error) out.push(`    ${t(h.error)}`);
  }
  out.push("findings");
  for (const f of r.findings)
    out.push(`  ${f.ok ? "ok     " : "PROBLEM"}  ${t(f.what)}\n           next: ${t(f.next)}`);
  process.stdout.write(`${out.join("\n")}\n`);
  return bad ? EXIT_CHECK_FAILED : 0;
}

/** Every file doctor looks for host servers in, from this directory (onboard/hosts.ts). */
function lookedIn(): string {
  return HOSTS.flatMap((h) => hostFiles(h, process.cwd()).map((f) => f.file)).join(", ");
}
