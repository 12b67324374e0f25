// The one place a browser is launched for tests: Debian's chromium (/usr/bin/chromium) driven by
// playwright-core, headless, with a fresh user-data-dir removed on close. No browser download.
import { existsSync } from "node:fs";
import { type BrowserContext, chromium, type Page } from "playwright-core";
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

export async function launchBrowser(): Promise<TestBrowser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`);
  const profile = tempDir("portcullis-chromium-");
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport: { width: 1400, height: 1000 },
  });
  context.setDefaultTimeout(20_000);
  const dialogs: string[] = [];
  const errors: string[] = [];
  const watch = (page: Page) => {
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
  watch(page);
  return {
    context,
    page,
    dialogs,
    errors,
    newPage: () => context.newPage(),
    async close() {
      await context.close().catch(() => {});
      removeDir(profile);
    },
  };
}

/**
 * One browser for a test file (launched before its tests, closed after), with a list of cleanups
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
