// node cli.mjs STATE_DIR init|audit ARGS…  — runs the built command functions as the
// dispatcher would, and exits with their exit code.
const [stateDir, command, ...args] = process.argv.slice(2);
const dist = new URL("../../../dist/cli/", import.meta.url);
const code =
  command === "init"
    ? await (await import(new URL("init.js", dist).href)).initCommand(args, { stateDir })
    : await (await import(new URL("audit.js", dist).href)).auditCommand(args, { stateDir });
process.exitCode = code;
