// Drives the playground page in headless Chromium (scripts/browser-test.sh):
// the page comes from one origin and queries the API on another, so the
// answers pass through CORS. Loopback only: every other request is aborted
// and every other host name is unresolvable.
//
//   node playground-test.mjs <page origin> <api origin> <screenshot.png>
import { chromium } from "playwright-core";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [pageOrigin, apiOrigin, screenshot] = process.argv.slice(2);
if (!pageOrigin || !apiOrigin || !screenshot) {
  console.error("usage: node playground-test.mjs <page origin> <api origin> <screenshot.png>");
  process.exit(2);
}
const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]"]);
const isLoopback = (u) => {
  try { return LOOPBACK.has(new URL(u).hostname); } catch { return false; }
};
for (const origin of [pageOrigin, apiOrigin]) {
  if (!isLoopback(origin)) throw new Error(`not a loopback origin: ${origin}`);
}
if (new URL(pageOrigin).origin === new URL(apiOrigin).origin) {
  throw new Error("the page and the API must be on different origins (CORS is the point)");
}

const DEMO_LINK = "https://app.milanote.com/1W3ZZU1Qvua02H/demo?p=demo";
const failures = [];
const check = (ok, what) => {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failures.push(what);
};

// What the board is called, straight from the API (Node, loopback).
const direct = await fetch(`${apiOrigin}/api/search?url=${encodeURIComponent(DEMO_LINK)}`);
const expectedTitle = (await direct.json()).data.board.title;

const userDataDir = mkdtempSync(join(tmpdir(), "playground-chromium-"));
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  viewport: { width: 1280, height: 900 },
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
  ],
});
try {
  const apiRequests = [];
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (!isLoopback(url)) return route.abort();
    if (url.startsWith(apiOrigin)) apiRequests.push(url);
    return route.continue();
  });
  const page = context.pages()[0] || (await context.newPage());
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(String(e)));

  await page.goto(`${pageOrigin}/`);
  check((await page.title()) === "shared-board-api playground", "the playground loads");
  check((await page.inputValue("#base")) === pageOrigin, "API base defaults to the page's origin");
  check((await page.inputValue("#link")) === DEMO_LINK, "the demo link is prefilled");

  // 1. search on the other origin: status, ETag read through CORS, outline.
  await page.fill("#base", apiOrigin);
  await page.click("#send");
  await page.waitForFunction(() => /^\d{3}/.test(document.querySelector("#status").textContent));
  const status = await page.textContent("#status");
  const etag = await page.textContent("#etag");
  const outline = await page.textContent("#outline");
  check(status.startsWith("200"), `search answered 200 (${status})`);
  check(/^W\/"[0-9a-f]{32}"$/.test(etag), `the script read the ETag header through CORS (${etag})`);
  check((await page.textContent("#cache-control")).startsWith("public, max-age="), "Cache-Control shown");
  check(/ms/.test(await page.textContent("#elapsed")), "the time taken is shown");
  check(outline.includes(expectedTitle), `the outline shows the board title "${expectedTitle}"`);
  check((await page.locator("#outline li").count()) > 1, "the outline lists the board's nodes");
  check(apiRequests.some((u) => u.startsWith(`${apiOrigin}/api/search?`)), "the request went to the API origin");
  const curl = await page.textContent("#curl");
  check(curl.startsWith(`curl -si '${apiOrigin}/api/search?url=`), `the curl line targets the API (${curl.slice(0, 60)}...)`);
  await page.screenshot({ path: screenshot, fullPage: true });

  // 2. detail with If-None-Match (a preflighted request): 304.
  await page.check("input[value=detail]");
  await page.click("#send");
  await page.waitForFunction(() => document.querySelector("#status").textContent.startsWith("200"));
  await page.check("#conditional");
  check((await page.textContent("#curl")).includes("-H 'If-None-Match: W/"), "the curl line carries If-None-Match");
  await page.click("#send");
  await page.waitForFunction(() => /^\d{3}/.test(document.querySelector("#status").textContent));
  check((await page.textContent("#status")).startsWith("304"), "If-None-Match across origins gives 304 (preflight passed)");
  await page.uncheck("#conditional");

  // 3. the JSON tree of a pruned view.
  await page.selectOption("#mode", "include");
  await page.fill("#selectors", "board.**.title");
  await page.click("#send");
  await page.waitForFunction(() => document.querySelector("#status").textContent.startsWith("200"));
  await page.click("#tab-tree");
  const tree = await page.textContent("#tree");
  check(tree.includes("title") && tree.includes(expectedTitle), "the JSON tree shows the pruned document");

  // 4. an error: code, message and field.
  await page.fill("#link", "https://example.com/not-a-board?p=x");
  await page.selectOption("#mode", "");
  await page.click("#send");
  await page.waitForFunction(() => /^\d{3}/.test(document.querySelector("#status").textContent));
  const error = await page.textContent("#error");
  check((await page.textContent("#status")).startsWith("400"), "a foreign link is a 400");
  check(error.includes("INVALID_SHARE_URL") && error.includes("field: url"), `the error shows code and field (${error.trim()})`);
  await page.screenshot({ path: screenshot.replace(/\.png$/, "-error.png"), fullPage: true });

  check(pageErrors.length === 0, `no script errors (${pageErrors.join("; ")})`);
} finally {
  await context.close();
  rmSync(userDataDir, { recursive: true, force: true });
}
console.log(failures.length ? `\n${failures.length} check(s) failed` : "\nall browser checks passed");
process.exit(failures.length ? 1 : 0);
