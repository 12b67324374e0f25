// The one place a browser is launched for tests: Debian's chromium (/usr/bin/chromium) driven by
// playwright-core, headless, with a fresh user-data-dir removed on close. No browser download.
import { existsSync } from "node:fs";
import { type BrowserContext, chromium, type Page } from "playwright-core";
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
