// node writer.mjs STATE_DIR TAG COUNT|forever
// Opens the store and the audit log from dist/, prints "ready", waits for a line on stdin
// ("go"), then appends COUNT tool_called events tagged TAG (or appends until killed,
// printing the seq of each durable append).
const [stateDir, tag, count] = process.argv.slice(2);
const dist = (p) => import(new URL(`../../../dist/${p}`, import.meta.url).href);
const { openStore } = await dist("store/db.js");
const { AuditLog } = await dist("audit/index.js");
const db = openStore(stateDir);
const log = AuditLog.open(db, stateDir);
process.stdout.write("ready\n");
await new Promise((resolve) => process.stdin.once("data", resolve));
process.stdin.destroy();
const event = (i) => ({ type: "tool_called", run: tag, requestId: i, tool: "inventory_adjust", epoch: "E1" });
if (count === "forever") {
  for (let i = 0; ; i++) {
    const { seq } = log.append(event(i));
    process.stdout.write(`${seq}\n`);
  }
} else {
  for (let i = 0; i < Number(count); i++) log.append(event(i));
  db.close();
}
