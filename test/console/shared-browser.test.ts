// test/helpers/browser.ts shares one chromium among the files a worker runs: each caller must
// still get a context of its own (a cookie one file set never reaches the next), and a shared
// browser that was closed or crashed must be launched again rather than fail every later file.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, test } from "vitest";
import { launchBrowser } from "../helpers/browser.js";

let server: Server;
let url: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    res.setHeader("content-type", "text/html");
    if (req.url === "/set") res.setHeader("set-cookie", "left=behind; Path=/");
    res.end(`<p id="cookie">${req.headers.cookie ?? "none"}</p>`);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

test("a second caller sees none of the first caller's cookies or storage", async () => {
  const first = await launchBrowser();
  await first.page.goto(`${url}/set`);
  await first.page.evaluate(`localStorage.setItem("left", "behind")`);
  await first.page.goto(url);
  expect(await first.page.textContent("#cookie")).toBe("left=behind");

  const second = await launchBrowser();
  try {
    expect(second.context.browser()).toBe(first.context.browser()); // one chromium, two contexts
    await second.page.goto(url);
    expect(await second.page.textContent("#cookie")).toBe("none");
    expect(await second.page.evaluate(`localStorage.getItem("left")`)).toBeNull();
  } finally {
    await second.close();
    await first.close();
  }
});

test("close() ends the caller's context only; a closed shared browser is launched again", async () => {
  const one = await launchBrowser();
  const browser = one.context.browser();
  await one.close();
  expect(browser?.isConnected()).toBe(true);

  await browser?.close(); // what a crash looks like to the next caller: a disconnected browser
  const two = await launchBrowser();
  try {
    expect(two.context.browser()).not.toBe(browser);
    await two.page.goto(url);
    expect(await two.page.textContent("#cookie")).toBe("none");
  } finally {
    await two.close();
  }
});

test("own: a browser process of its own, ended by close()", async () => {
  const shared = await launchBrowser();
  const own = await launchBrowser({ own: true });
  try {
    expect(own.context.browser()).not.toBe(shared.context.browser());
    await own.page.goto(url);
    expect(await own.page.textContent("#cookie")).toBe("none");
  } finally {
    await own.close();
    await shared.close();
  }
  expect(shared.context.browser()?.isConnected()).toBe(true);
});
