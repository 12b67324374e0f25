// /events, the console's change stream: a page is told when the store changes, including a
// change made between the page being rendered and its stream connecting.
import { request } from "node:http";
import { describe, expect, it } from "vitest";
import { removeDir, sleep } from "../helpers/files.js";
import { startGateway } from "../helpers/gateway.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";
import { httpLogin, raw, startConsoleProcess } from "./helpers.js";

/** Opens the stream; `changes()` resolves with the first `change` event, or rejects after `ms`. */
function stream(base: string, path: string, cookie: string) {
  let text = "";
  let notify: () => void = () => {};
  const req = request(`${base}${path}`, { headers: { Cookie: cookie } }, (res) => {
    res.setEncoding("utf8");
    res.on("data", (d) => {
      text += d;
      notify();
    });
  });
  req.on("error", () => {});
  req.end();
  return {
    changed(ms = 20_000): Promise<void> {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no change event in ${ms} ms: ${text}`)), ms);
        notify = () => {
          if (text.includes("event: change")) {
            clearTimeout(timer);
            resolve();
          }
        };
        notify();
      });
    },
    close: () => req.destroy(),
  };
}

describe("/events", () => {
  it("tells a page of a change, even one made before its stream connected", async () => {
    const stateDir = newStateDir();
    const c = await startConsoleProcess(stateDir);
    try {
      const s = await httpLogin(c.url);
      const page = await raw(`${c.url}/servers`, { headers: { Cookie: s.cookie } });
      const tag = /data-live="([^"]*)"/.exec(page.body)![1]!;
      // Another page's stream is open (the console watches the store) while a gateway comes and goes…
      const early = stream(c.url, `/events?since=${tag}`, s.cookie);
      try {
        const gw = await startGateway({
          stateDir,
          args: ["--label", "echo", "--approval", "none", "--", NODE, FIXTURES.echo],
        });
        await gw.close();
        await early.changed();
        // …and the store is quiet again: the watcher has seen everything.
        const tagNow = async () =>
          /data-live="([^"]*)"/.exec(
            (await raw(`${c.url}/servers`, { headers: { Cookie: s.cookie } })).body,
          )![1]!;
        let last = await tagNow();
        for (;;) {
          await sleep(1200);
          const next = await tagNow();
          if (next === last) break;
          last = next;
        }
        expect(last).not.toBe(tag);
        // A page rendered before all that connects its stream now: it is told at once.
        const late = stream(c.url, `/events?since=${encodeURIComponent(tag)}`, s.cookie);
        await late.changed();
        late.close();
      } finally {
        early.close();
      }
    } finally {
      await c.stop();
      removeDir(stateDir);
    }
  });
});
