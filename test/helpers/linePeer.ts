// A gateway spoken to in raw JSON-RPC lines, started by any command line (under `unshare`, in the
// namespace tests): its answers matched to requests by id, its stderr kept. For the tests that
// cannot use the SDK client's own spawn.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { expect } from "vitest";

export class LinePeer {
  readonly child: ChildProcessWithoutNullStreams;
  private buf = "";
  private nextId = 0;
  private readonly waiters = new Map<number, (m: Record<string, unknown>) => void>();
  stderr = "";
  readonly exited: Promise<void>;

  constructor(command: string, args: string[], options: { cwd?: string; env: NodeJS.ProcessEnv }) {
    this.child = spawn(command, args, options);
    this.child.stderr.on("data", (d: Buffer) => {
      this.stderr += d;
    });
    this.child.stdout.on("data", (d: Buffer) => {
      this.buf += d;
      for (let i = this.buf.indexOf("\n"); i >= 0; i = this.buf.indexOf("\n")) {
        const m = JSON.parse(this.buf.slice(0, i)) as Record<string, unknown>;
        this.buf = this.buf.slice(i + 1);
        const w = typeof m.id === "number" ? this.waiters.get(m.id) : undefined;
        if (w) w(m);
      }
    });
    this.child.stdin.on("error", () => {});
    this.exited = new Promise((r) => this.child.on("close", () => r()));
  }

  send(method: string, params: unknown = {}): Promise<Record<string, unknown>> {
    const id = ++this.nextId;
    this.child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`);
    return new Promise((r) => this.waiters.set(id, r));
  }

  /** The legacy handshake, then one tools/list. */
  async open(clientName: string): Promise<void> {
    const init = await this.send("initialize", {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name: clientName, version: "1" },
    });
    expect(init.result, this.stderr).toBeDefined();
    this.child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`);
    await this.send("tools/list");
  }

  /** The client closes its input; resolves once the process has exited. */
  async close(): Promise<void> {
    this.child.stdin.end();
    await this.exited;
  }

  async kill(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGKILL");
    await this.exited;
  }
}
