// The admin page in a real browser (Debian's Chromium, driven by playwright-core): sign in with
// the super-admin token, turn a hook off with its toggle, save, and see the inventory say so.
// Run by host/tests/admin_browser.rs, which starts `cst-agent admin serve` and checks the file.
//
// Environment: ADMIN_URL (http://127.0.0.1:PORT), ADMIN_TOKEN, HOOK_ID, USER_DATA_DIR,
// SCREENSHOT (a .png path, optional), PLAYWRIGHT_CORE (the module's folder).
"use strict";

const { chromium } = require(process.env.PLAYWRIGHT_CORE || "playwright-core");

function need(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

async function main() {
  const base = need("ADMIN_URL");
  const hook = need("HOOK_ID");
  // A fresh profile folder of the test's own (launchPersistentContext is how playwright takes it).
  const browser = await chromium.launchPersistentContext(need("USER_DATA_DIR"), {
    viewport: { width: 1000, height: 760 },
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  try {
    const page = browser.pages()[0] || (await browser.newPage());
    const violations = [];
    page.on("console", (m) => {
      if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
    });
    await page.goto(`${base}/agent-plugins/`);
    // Not signed in: the sign-in page.
    await page.waitForURL(/\/login$/);
    await page.fill("#token", need("ADMIN_TOKEN"));
    await Promise.all([page.waitForURL(/\/agent-plugins\/$/), page.click("#sign-in")]);

    const state = page.locator(`#hooks tr[data-id="${hook}"] span.enabled`);
    const before = (await state.textContent()).trim();
    if (before !== "enabled") throw new Error(`hook ${hook} shows "${before}" before the toggle`);

    await page.click(`#hooks tr[data-id="${hook}"] input.toggle`);
    const edited = JSON.parse(await page.inputValue("#config"));
    const entry = edited.hooks.find((h) => h.id === hook);
    if (!entry || entry.enabled !== false) throw new Error("the toggle did not set enabled: false in the editor");

    // Save reloads the page once the server accepted it.
    await Promise.all([page.waitForEvent("load"), page.click("#save")]);
    const after = (await page.locator(`#hooks tr[data-id="${hook}"] span.enabled`).textContent()).trim();
    if (after !== "disabled") throw new Error(`hook ${hook} shows "${after}" after saving`);
    const checked = await page.isChecked(`#hooks tr[data-id="${hook}"] input.toggle`);
    if (checked) throw new Error("the toggle is still on after saving");

    // No secret reached the page: every header value is masked.
    const html = await page.content();
    for (const secret of (process.env.SECRETS || "").split("\n").filter(Boolean)) {
      if (html.includes(secret)) throw new Error("a stored secret is on the page");
    }
    if (violations.length) throw new Error(`CSP violations: ${violations.join("; ")}`);
    if (process.env.SCREENSHOT) {
      await page.evaluate(() => window.scrollTo(0, 0));
      await page.screenshot({ path: process.env.SCREENSHOT });
    }
    console.log("ok: hook toggled, saved, inventory shows it disabled");
  } finally {
    await browser.close();
  }
}

main().catch((e) => {
  console.error(`error: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
