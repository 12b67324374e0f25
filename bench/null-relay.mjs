#!/usr/bin/env node
// The floor for anything that sits between an MCP client and a stdio server: spawn the server,
// pipe our stdin to its stdin and its stdout to our stdout, nothing else (no parsing, no
// framing). Its stderr is inherited.
//   node bench/null-relay.mjs -- COMMAND [ARGS...]
import { spawn } from "node:child_process";

const sep = process.argv.indexOf("--");
const [command, ...args] = sep < 0 ? [] : process.argv.slice(sep + 1);
if (!command) {
  process.stderr.write("usage: node bench/null-relay.mjs -- COMMAND [ARGS...]\n");
  process.exit(2);
}
const child = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
child.stdin.on("error", () => {}); // the server went away: its exit ends us below
process.stdin.pipe(child.stdin);
child.stdout.pipe(process.stdout);
child.on("error", (error) => {
  process.stderr.write(`null-relay: ${error.message}\n`);
  process.exit(2);
});
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
for (const signal of ["SIGTERM", "SIGINT"]) process.on(signal, () => child.kill(signal));
