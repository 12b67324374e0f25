// The one place a browser is launched for tests: Debian's chromium (/usr/bin/chromium) driven by
// playwright-core, headless. No browser download.
//
// One chromium per worker process, launched on first use and shared by the files that worker runs
// one after another (`isolate: false`, vitest.config.ts): a launch and close cost about 3 s a file
// on a loaded machine. Each caller gets a fresh BrowserContext of its own (cookies, storage,
// permissions, pages: nothing reaches the next caller) and close() closes only that. Playwright
// kills the browser when the worker exits (its exit handler), and chromium ends when its pipe
// to the worker closes. A browser that crashed or was closed is launched again on the next call.
// `launchBrowser({ own: true })` keeps a browser process and profile of its own for a test that
// must end or break the browser itself.
import { existsSync } from "node:fs";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, afterEach, beforeAll } from "vitest";
import { removeDir, tempDir } from "./files.js";

export const CHROMIUM = process.env.PORTCULLIS_TEST_CHROMIUM ?? "/usr/bin/chromium";

const ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

const VIEWPORT = { width: 1400, height: 1000 };

export interface TestBrowser {
  context: BrowserContext;
  page: Page;
  /** every JavaScript dialog (alert, confirm, prompt) any page opened: an XSS payload that ran */
  dialogs: string[];
  /** console errors and page errors (a CSP violation shows here) */
  errors: string[];
  newPage(): Promise<Page>;
  close(): Promise<void>;
}

export interface LaunchOptions {
  /** a chromium process and persistent profile of its own, ended by close() */
  own?: boolean;
}

let shared: Promise<Browser> | undefined;

/** The worker's chromium: launched on first use, and again after it crashed or was closed. */
async function sharedBrowser(): Promise<Browser> {
  const current = shared;
  if (current) {
    const browser = await current.catch(() => undefined);
    if (browser?.isConnected()) return browser;
    if (shared === current) shared = undefined;
    if (shared) return sharedBrowser(); // another caller is launching one already
  }
  const launching = chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
  shared = launching;
  try {
    const browser = await launching;
    browser.on("disconnected", () => {
      if (shared === launching) shared = undefined;
    });
    return browser;
  } catch (e) {
    if (shared === launching) shared = undefined;
    throw e;
  }
}

async function freshContext(): Promise<BrowserContext> {
  try {
    return await (await sharedBrowser()).newContext({ viewport: VIEWPORT });
  } catch (e) {
    // the browser died between the check and the call: one more launch, then give up
    const browser = await shared?.catch(() => undefined);
    if (browser?.isConnected()) throw e;
    return (await sharedBrowser()).newContext({ viewport: VIEWPORT });
  }
}

export async function launchBrowser(options: LaunchOptions = {}): Promise<TestBrowser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`);
  let context: BrowserContext;
  let profile: string | undefined;
  if (options.own) {
    profile = tempDir("portcullis-chromium-");
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ARGS,
      viewport: VIEWPORT,
    });
  } else {
    context = await freshContext();
  }
  context.setDefaultTimeout(20_000);
  const dialogs: string[] = [];
  const errors: string[] = [];
  const watched = new WeakSet<Page>();
  const watch = (page: Page) => {
    if (watched.has(page)) return;
    watched.add(page);
    page.on("dialog", (d) => {
      dialogs.push(`${d.type()}: ${d.message()}`);
      d.dismiss().catch(() => {});
    });
    page.on("pageerror", (e) => errors.push(e.message));
    page.on("console", (m) => {
      if (m.type() === "error") errors.push(m.text());
    });
  };
  context.on("page", watch);
  const page = context.pages()[0] ?? (await context.newPage());
  watch(page); // a persistent context's first page was open before the listener
  return {
    context,
    page,
    dialogs,
    errors,
    newPage: () => context.newPage(),
    async close() {
      await context.close().catch(() => {});
      if (profile) removeDir(profile);
    },
  };
}

/**
 * One browser context for a test file (opened before its tests, closed after), with a list of cleanups
 * run after each test, and the cookies cleared between tests.
 */
export function browserSuite(): { readonly browser: TestBrowser; cleanup: (() => Promise<void> | void)[] } {
  let browser: TestBrowser | undefined;
  const suite = {
    get browser(): TestBrowser {
      if (!browser) throw new Error("the browser is not launched yet (use it inside a test)");
      return browser;
    },
    cleanup: [] as (() => Promise<void> | void)[],
  };
  beforeAll(async () => {
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });
  afterEach(async () => {
    for (const c of suite.cleanup.splice(0).reverse()) await c();
    await browser?.context.clearCookies();
  });
  return suite;
}

/** A call's promise that may be left behind when a test fails early: never an unhandled rejection. */
export function held<T>(p: Promise<T>): Promise<T> {
  p.catch(() => {});
  return p;
}
