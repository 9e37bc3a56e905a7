// Drives the playground page in headless Chromium (scripts/browser-test.sh):
// the page comes from one origin and queries the API on another, so the
// answers pass through CORS. Loopback only: every other request is aborted
// and every other host name is unresolvable.
//
//   node playground-test.mjs <page origin> <api origin> <screenshot.png>
//
// Screenshots: <shot>.png (the POST form), <shot>-workbench.png (the request
// code run as written), <shot>-error.png, <shot>-canvas.png (the
// demo board drawn), <shot>-nested.png (a nested board opened from its tile),
// <shot>-mentions.png (the demo's card of every TipTap node),
// <shot>-markdown.png, <shot>-constructed.png (a document with every new
// element type and hostile text, drawn from the "saved answer" box),
// <shot>-captured.png (a board in the web app's captured shape, grid units,
// served from tests/fixtures/captured-board), <shot>-not-sent.png (a page
// link whose API base is another origin, waiting for a click).
import { chromium } from "playwright-core";
import { constructedDocument } from "./constructed-board.mjs";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { readFile } from "node:fs/promises";
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
// The board of tests/fixtures/captured-board, for any permission id.
const CAPTURED_LINK = "https://app.milanote.com/1XbZEplawr6y02/grid?p=any-permission";
// One grid unit in px at 100 %, as the page documents it (304 px per 34 units).
const UNIT = 304 / 34;
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
    if (url.startsWith(apiOrigin)) {
      const r = route.request();
      apiRequests.push({ url, accept: r.headers().accept, method: r.method(), body: r.postData() });
    }
    return route.continue();
  });
  const page = context.pages()[0] || (await context.newPage());
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  const cspViolations = [];
  page.on("console", (m) => {
    if (/Content Security Policy/i.test(m.text())) cspViolations.push(m.text());
  });
  const shot = (name) => screenshot.replace(/\.png$/, `-${name}.png`);

  await page.goto(`${pageOrigin}/`);
  check((await page.title()) === "shared-board-api playground", "the playground loads");
  check((await page.inputValue("#base")) === pageOrigin, "API base defaults to the page's origin");
  check((await page.inputValue("#link")) === DEMO_LINK, "the demo link is prefilled");

  // 1. the POST form on the other origin (the default): status, ETag and
  // request id read through CORS, outline; the share link never in a URL.
  await page.fill("#base", apiOrigin);
  await page.click("#send");
  await page.waitForFunction(() => /^\d{3}/.test(document.querySelector("#status").textContent));
  const status = await page.textContent("#status");
  const etag = await page.textContent("#etag");
  const outline = await page.textContent("#outline");
  check(status.startsWith("200"), `the POST form answered 200 (${status})`);
  check(/^W\/"[0-9a-f]{32}"$/.test(etag), `the script read the ETag header through CORS (${etag})`);
  check((await page.textContent("#cache-control")) === "no-store", "Cache-Control shown: the POST form's answer is no-store");
  check(/^[0-9a-f]{12}-[0-9a-f]+$/.test(await page.textContent("#request-id")), "the X-Request-Id is read through CORS");
  check(/ms/.test(await page.textContent("#elapsed")), "the time taken is shown");
  check(outline.includes(expectedTitle), `the outline shows the board title "${expectedTitle}"`);
  check((await page.locator("#outline li").count()) > 1, "the outline lists the board's nodes");
  const posted = apiRequests.filter((r) => r.url === `${apiOrigin}/api/board` && r.method === "POST");
  check(posted.length === 1 && JSON.parse(posted[0].body).url === DEMO_LINK,
    "the request went to the API origin as POST /api/board, the link in the body");
  check(!apiRequests.some((r) => r.url.includes("milanote")), "no URL the page requested holds the share link");
  await page.screenshot({ path: screenshot, fullPage: true });

  await checkWorkbench(page, shot);

  // 2. detail with If-None-Match (a preflighted GET): 304.
  await page.check("input[value=detail]");
  await page.click("#send");
  await page.waitForFunction(() => document.querySelector("#status").textContent.startsWith("200"));
  await page.check("#conditional");
  check(!(await page.textContent("#snippet-curl")).includes("If-None-Match"), "the request code stays in the POST form (never 304)");
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

  await checkCanvas(page, shot);
  await checkMarkdown(page, shot, apiRequests);
  await checkChanges(page, shot);
  await checkCaptured(page, shot);
  await checkConstructed(page, shot);
  await checkRunParameter(page, shot, apiRequests);

  check(pageErrors.length === 0, `no script errors (${pageErrors.join("; ")})`);
  check(cspViolations.length === 0, `no Content-Security-Policy violations (${cspViolations.join("; ")})`);
} finally {
  await context.close();
  rmSync(userDataDir, { recursive: true, force: true });
}
// The demo board (full view) on the canvas: positions, text, image, nested
// board and back, and the board's line between two elements.
async function checkCanvas(page, shot) {
  const full = await (await fetch(`${apiOrigin}/api/detail?url=${encodeURIComponent(DEMO_LINK)}`)).json();
  const children = full.data.board.children;
  await page.fill("#link", DEMO_LINK);
  await page.selectOption("#mode", "");
  await page.check("input[value=detail]");
  await page.selectOption("#view", "full");
  await page.click("#send");
  await page.waitForFunction(() => document.querySelector("#status").textContent.startsWith("200"));
  await page.click("#tab-canvas");
  await page.waitForSelector("#canvas-view .el.placed");

  // Placement: every placed pair ordered by x in the data is ordered by x on screen.
  // A LINE (or, before the server knows the type, an UNKNOWN one) is a path, not a box.
  const isLine = (c) => c.type === "LINE" || c.elementType === "LINE";
  const placed = children.filter((c) => !isLine(c) && c.location && c.location.position &&
    typeof c.location.position.x === "number");
  const lefts = await page.evaluate((ids) => ids.map((id) => {
    const box = document.querySelector(`#canvas-view .el.placed[data-id="${id}"]`);
    return box ? box.getBoundingClientRect().left : null;
  }), placed.map((c) => c.id));
  check(lefts.every((l) => l !== null), `every positioned element of the board is placed (${placed.length}; missing: ${placed.filter((c, i) => lefts[i] === null).map((c) => c.id + " " + c.type)})`);
  let ordered = true;
  for (let i = 0; i < placed.length; i++) {
    for (let j = 0; j < placed.length; j++) {
      const [a, b] = [placed[i].location.position.x, placed[j].location.position.x];
      if (a < b && !(lefts[i] < lefts[j])) ordered = false;
    }
  }
  const card = children.find((c) => c.id === "Wq3mTz8Lp0Ab1C");
  const image = children.find((c) => c.type === "IMAGE");
  check(card.location.position.x < image.location.position.x && ordered,
    "an element with a smaller x is drawn left of one with a larger x (all pairs)");

  // Card text, readable: the rendered text holds the card's plain text words, and is visible.
  const cardInfo = await page.evaluate(() => {
    const box = document.querySelector('#canvas-view [data-id="Wq3mTz8Lp0Ab1C"]');
    const r = box.getBoundingClientRect();
    const style = getComputedStyle(box.querySelector("p") || box);
    return { text: box.innerText, w: r.width, h: r.height, bold: box.querySelectorAll("strong").length,
      heading: box.querySelectorAll("h4").length, fontSize: parseFloat(style.fontSize), color: style.color };
  });
  const firstLine = card.richText.plainText.split("\n")[0];
  check(cardInfo.text.includes(firstLine) && cardInfo.text.includes("Lisbon"), `card text is on the canvas ("${firstLine}")`);
  check(cardInfo.w > 100 && cardInfo.h > 40 && cardInfo.fontSize >= 12 && cardInfo.color !== "rgba(0, 0, 0, 0)",
    `the card is readable (${Math.round(cardInfo.w)}x${Math.round(cardInfo.h)} px, ${cardInfo.fontSize}px text)`);
  check(cardInfo.bold >= 2 && cardInfo.heading === 1, "rich text marks and heading are rendered (bold, heading)");

  // Tasks with their check state, the table as a grid, the link with its host.
  const misc = await page.evaluate(() => ({
    tasks: Array.from(document.querySelectorAll('#canvas-view .el-TASK input[type=checkbox]'), (c) => c.checked),
    cells: document.querySelectorAll("#canvas-view .el-TABLE td").length,
    linkHost: (document.querySelector("#canvas-view .el-LINK .muted") || {}).textContent,
    linkHref: (document.querySelector("#canvas-view .el-LINK a") || {}).href,
  }));
  check(misc.tasks.length >= 3 && misc.tasks.includes(true) && misc.tasks.includes(false), `tasks show their check state (${misc.tasks})`);
  check(misc.cells >= 4, `the table is a grid (${misc.cells} cells)`);
  check(misc.linkHost === "www.timeout.com" && /^https:/.test(misc.linkHref), `the link shows its host (${misc.linkHost})`);

  // The demo image comes from the sample upstream and loads.
  await page.waitForFunction(() => {
    const img = document.querySelector("#canvas-view .el-IMAGE img");
    return img && img.complete;
  });
  const img = await page.evaluate(() => {
    const i = document.querySelector("#canvas-view .el-IMAGE img");
    return { src: i.src, w: i.naturalWidth, shown: i.getBoundingClientRect().height };
  });
  check(img.w > 0 && img.shown > 20 && /^http:\/\/127\.0\.0\.1:\d+\/images\//.test(img.src),
    `a demo image loads from the sample upstream (${img.src}, ${img.w}px wide)`);

  // The board's line (from a card to the image) ends on the two boxes.
  const line = await lineEnds(page, "Lin8Arrow0Cd1E");
  check(line && line.onFrom && line.onTo, `the demo's line runs from its card's box to the image's box (${JSON.stringify(line)})`);
  // The demo board is in the web app's captured shape (grid units): drawn
  // as the web app draws it, no two top-level boxes overlap, and nothing
  // trashed or deleted shows.
  const demoBoxes = await topLevelBoxes(page);
  check(demoBoxes.top.length >= 6 && demoBoxes.overlaps.length === 0,
    `the demo board: no two of its ${demoBoxes.top.length} top-level boxes overlap (${demoBoxes.overlaps.join(" ") || "none"})`);
  const demoText = await page.evaluate(() => document.querySelector("#canvas-view").innerText);
  const removedText = ["TRASHED-CARD-TEXT", "DELETED-CARD-TEXT", "DELETED-COLUMN-TITLE", "BELOW-DELETED-TEXT", "TRASHED-BOARD-TITLE"]
    .filter((t) => demoText.includes(t));
  check(removedText.length === 0, `the demo board: no trashed or deleted element is drawn (${removedText.join(", ") || "none"})`);
  await page.screenshot({ path: shot("canvas"), fullPage: true });

  // TipTap's inline nodes read as the web app shows them: mentions as
  // @label and board links as their title, in the line where they stand.
  const mentions = await page.evaluate(() => {
    const card = document.querySelector('#canvas-view [data-id="Crd9EveryNode1"]');
    const line = card && Array.from(card.querySelectorAll("p")).find((p) => p.textContent.startsWith("Plan with"));
    const links = line ? Array.from(line.querySelectorAll(".board-link"), (b) => [b.tagName, b.textContent, b.href || ""]) : [];
    return { text: line ? line.textContent : null, blocks: line ? line.querySelectorAll("div, p").length : -1, links };
  });
  check(mentions.text === "Plan with @Ben and @Ana, day by day in Day-by-day itinerary, the Porto part in Porto day trip." &&
    mentions.blocks === 0, `mentions and board links stay in their line (${JSON.stringify(mentions.text)})`);
  check(mentions.links.length === 2 && mentions.links[0][0] === "A" && /^https:/.test(mentions.links[0][2]) &&
    mentions.links[1][0] === "SPAN", `a board link with a web URL is a link, a relative one its title (${JSON.stringify(mentions.links)})`);
  const everyNode = await page.locator('#canvas-view [data-id="Crd9EveryNode1"]');
  await everyNode.scrollIntoViewIfNeeded();
  await everyNode.screenshot({ path: shot("mentions") });

  // The board as a JSON Canvas file, downloaded from the canvas tab.
  const [download] = await Promise.all([page.waitForEvent("download"), page.click("#canvas-download")]);
  const file = await download.path();
  const saved = JSON.parse(await readFile(file, "utf8"));
  check(download.suggestedFilename().endsWith(".canvas") && Array.isArray(saved.nodes) && saved.nodes.length > 6 &&
    Array.isArray(saved.edges) && saved.edges.length === 1,
    `the canvas downloads as ${download.suggestedFilename()} (${saved.nodes.length} nodes, ${saved.edges.length} edge)`);
  check((await page.textContent("#canvas-download-note")).startsWith("saved "), "the page says the file was saved");
  if (process.env.CANVAS_OUT) await download.saveAs(process.env.CANVAS_OUT);

  // A nested board's tile opens its canvas; back returns.
  const nested = children.find((c) => c.type === "BOARD");
  await page.click(`#canvas-view .el-BOARD[data-id="${nested.id}"]`);
  await page.waitForFunction((t) => document.querySelector("#canvas-crumbs .current").textContent === t, nested.title);
  const inside = await page.evaluate(() =>
    Array.from(document.querySelectorAll("#canvas-view .surface > .el, #canvas-view .loose > .el"), (e) => e.dataset.id));
  const expected = nested.children.filter((c) => !isLine(c)).map((c) => c.id);
  check(expected.length > 0 && expected.every((id) => inside.includes(id)) && !inside.includes("Wq3mTz8Lp0Ab1C"),
    `the nested board's tile opens its canvas (${inside.length} of its ${expected.length} elements)`);
  check(!(await page.isDisabled("#canvas-back")), "a way back is offered");
  await page.screenshot({ path: shot("nested"), fullPage: true });
  await page.click("#canvas-back");
  await page.waitForFunction((t) => document.querySelector("#canvas-crumbs .current").textContent === t, full.data.board.title);
  check(await page.locator('#canvas-view [data-id="Wq3mTz8Lp0Ab1C"]').count() === 1 && await page.isDisabled("#canvas-back"),
    "back returns to the root board's canvas");

  // A pruned view shows what it has.
  await page.selectOption("#view", "compact");
  await page.click("#send");
  await page.waitForFunction(() => document.querySelector("#status").textContent.startsWith("200") &&
    document.querySelector("#canvas-view .el"));
  const compact = await page.evaluate(() => document.querySelectorAll("#canvas-view .el").length);
  check(compact > 3, `the compact view is drawn with what it has (${compact} boxes)`);
  await page.selectOption("#view", "full");
}

// The workbench's request code, run as written against the demo: the curl
// line from a shell, the fetch in the page (through CORS), the Python in
// python3 when it has `requests`; each gives the board GET /api/detail gives
// for the same parameters. Nothing typed is stored by the page.
async function checkWorkbench(page, shot) {
  await page.selectOption("#view", "standard");
  await page.selectOption("#mode", "exclude");
  await page.fill("#selectors", "board.children.title, **.location");
  const curl = await page.textContent("#snippet-curl");
  const fetchJs = await page.textContent("#snippet-fetch");
  const python = await page.textContent("#snippet-python");
  check(curl.startsWith(`curl -s '${apiOrigin}/api/board'`) && curl.includes("Content-Type: application/json") &&
    !curl.includes("?url="), `the curl line is the POST form (${curl.split("\n")[0]})`);
  const query = new URLSearchParams({ url: DEMO_LINK, view: "standard", exclude: "board.children.title, **.location" });
  const expected = await (await fetch(`${apiOrigin}/api/detail?${query}`)).json();
  check(expected.ok === true, "GET /api/detail answers the same parameters");
  const same = (answer) => JSON.stringify(answer) === JSON.stringify(expected);
  const fromShell = JSON.parse(execFileSync("sh", ["-c", curl], { encoding: "utf8" }));
  check(same(fromShell), "the curl line, run from a shell, gives the board GET /api/detail gives");
  const inPage = await page.evaluate(`(async () => {\n${fetchJs}\nreturn answer;\n})()`);
  check(same(inPage), "the fetch, run in the page, gives the same board");
  let hasRequests = true;
  try { execFileSync("python3", ["-c", "import requests"], { stdio: "ignore" }); } catch { hasRequests = false; }
  if (hasRequests) {
    const out = execFileSync("python3", ["-c", `${python}\nimport json, sys\njson.dump(answer, sys.stdout)`], { encoding: "utf8" });
    check(same(JSON.parse(out)), "the Python requests call, run by python3, gives the same board");
  } else {
    console.log("skip python3 has no requests module: the Python snippet was not run");
  }
  const stored = await page.evaluate(() => ({ local: localStorage.length, session: sessionStorage.length, cookie: document.cookie }));
  check(stored.local === 0 && stored.session === 0 && stored.cookie === "", `nothing typed is stored (${JSON.stringify(stored)})`);
  await page.click("#tab-snippet-fetch");
  await page.screenshot({ path: shot("workbench"), fullPage: true });
  await page.click("#tab-snippet-curl");
  await page.selectOption("#view", "");
  await page.selectOption("#mode", "");
  await page.fill("#selectors", "");
}

// The top-level boxes of the canvas drawn now, and which pairs overlap.
async function topLevelBoxes(page) {
  const top = await page.evaluate(() => Array.from(document.querySelectorAll("#canvas-view .surface > .el.placed"), (e) => {
    const b = e.getBoundingClientRect();
    return { id: e.dataset.id, type: e.dataset.type, l: b.left, t: b.top, r: b.right, b: b.bottom, w: b.width };
  }));
  const overlaps = [];
  for (let i = 0; i < top.length; i++) {
    for (let j = i + 1; j < top.length; j++) {
      const [a, b] = [top[i], top[j]];
      const w = Math.min(a.r, b.r) - Math.max(a.l, b.l);
      const h = Math.min(a.b, b.b) - Math.max(a.t, b.t);
      if (w > 0.5 && h > 0.5) overlaps.push(`${a.id}/${b.id}`);
    }
  }
  return { top, overlaps };
}

// A board in the web app's captured shape (grid units, INBOX children, a
// deleted and a trashed card) drawn as the web app lays it out.
async function checkCaptured(page, shot) {
  await page.setViewportSize({ width: 1600, height: 1000 });
  await page.fill("#link", CAPTURED_LINK);
  await page.selectOption("#mode", "");
  await page.check("input[value=detail]");
  await page.selectOption("#view", "full");
  await page.click("#send");
  await page.waitForFunction(() => document.querySelector("#status").textContent.startsWith("200"));
  await page.click("#tab-canvas");
  await page.selectOption("#canvas-zoom", "1");
  await page.waitForSelector('#canvas-view .el.placed[data-id="1XbZEqlawr6y03"]');
  const { top, overlaps } = await topLevelBoxes(page);
  const r = await page.evaluate(() => {
    const column = document.querySelector('#canvas-view [data-id="1XbZEqlawr6y05"]');
    return {
      text: document.querySelector("#canvas-view").innerText,
      deletedBoxes: document.querySelectorAll('#canvas-view [data-id="1XbZEqlawr6y11"], #canvas-view [data-id="1XbZEqlawr6y12"]').length,
      columnOrder: column ? Array.from(column.querySelectorAll(".el"), (e) => e.dataset.id) : [],
      tasks: Array.from(document.querySelectorAll('#canvas-view [data-id="1XbZEqlawr6y10"] input[type=checkbox]'), (c) => c.checked),
    };
  });
  r.top = top;
  const by = Object.fromEntries(r.top.map((b) => [b.id, b]));
  const [first, right, below, narrow] = ["1XbZEqlawr6y03", "1XbZEqlawr6y04", "1XbZEqlawr6y08", "1XbZEqlawr6y09"].map((id) => by[id]);
  check(r.top.length === 6 && first && right && below && narrow, `captured board: the six top-level boxes are drawn (${r.top.map((b) => b.id).join(", ")})`);
  check(overlaps.length === 0, `captured board: no two top-level boxes overlap (${r.top.length} boxes; overlapping: ${overlaps.join(" ") || "none"})`);
  if (!(first && right && below && narrow)) return;
  check(right.l >= first.r, `captured board: the card at x 40 is right of the card at x 4 (${Math.round(first.r)} <= ${Math.round(right.l)} px)`);
  check(below.t >= first.b, `captured board: the card at y 30 is below the card at y 2 (${Math.round(first.b)} <= ${Math.round(below.t)} px)`);
  const near = (a, b) => Math.abs(a - b) <= 1.5;
  check(near(first.w, 34 * UNIT) && near(right.l - first.l, 36 * UNIT) && near(below.t - first.t, 28 * UNIT),
    `captured board: one grid unit is ${UNIT.toFixed(2)} px (a default card ${first.w.toFixed(1)} px wide, x 4 -> 40 is ${(right.l - first.l).toFixed(1)} px, y 2 -> 30 is ${(below.t - first.t).toFixed(1)} px)`);
  check(near(narrow.w, 30 * UNIT), `captured board: a card storing width 30 is ${narrow.w.toFixed(1)} px wide`);
  check(r.deletedBoxes === 0 && !r.text.includes("DELETED CARD TEXT") && !r.text.includes("TRASHED CARD TEXT"),
    "captured board: the deleted and the trashed card are not drawn");
  check(r.columnOrder.join() === "1XbZEqlawr6y06,1XbZEqlawr6y07", `captured board: the column's INBOX children in index order (${r.columnOrder})`);
  check(r.tasks.join() === "true,false", `captured board: tasks show isComplete (${r.tasks})`);
  await page.screenshot({ path: shot("captured"), fullPage: true });
  await page.setViewportSize({ width: 1280, height: 900 });
}

// ?api=<another origin>&run=1 in the page's own URL sends nothing until the
// user clicks Send; ?run=1 on the page's own origin sends at once.
async function checkRunParameter(page, shot, apiRequests) {
  const q = (api) => `?url=${encodeURIComponent(DEMO_LINK)}&run=1` + (api ? `&api=${encodeURIComponent(api)}` : "");
  const before = apiRequests.length;
  await page.goto(`${pageOrigin}/${q(apiOrigin)}`);
  await page.waitForFunction(() => document.querySelector("#status").textContent === "not sent");
  await page.waitForLoadState("networkidle");
  const error = await page.textContent("#error");
  check(apiRequests.length === before && error.includes("NOT_SENT") && error.includes(apiOrigin) &&
    (await page.inputValue("#base")) === apiOrigin,
    `?api=<another origin>&run=1: nothing sent, the base shown, waiting for a click (${error.trim().slice(0, 90)}...)`);
  await page.screenshot({ path: shot("not-sent"), fullPage: true });
  await page.click("#send");
  await page.waitForFunction(() => /^\d{3}/.test(document.querySelector("#status").textContent));
  check(apiRequests.length > before && (await page.textContent("#status")).startsWith("200"),
    "a click on Send then queries that base");
  await page.goto(`${pageOrigin}/${q(pageOrigin)}`);
  await page.waitForFunction(() => /^\d{3}/.test(document.querySelector("#status").textContent));
  check((await page.textContent("#status")).startsWith("200"), "?run=1 with the page's own origin sends at once");
  await page.goto(`${pageOrigin}/${q("")}`);
  await page.waitForFunction(() => /^\d{3}/.test(document.querySelector("#status").textContent));
  check((await page.textContent("#status")).startsWith("200"), "?run=1 without api (the page's origin) sends at once");
}

// Where a line's path starts and ends, and whether each end lies on the
// border of the box it names (within 1.5 px).
async function lineEnds(page, id) {
  return page.evaluate((id) => {
    const path = document.querySelector(`#canvas-view path[data-id="${id}"]`);
    if (!path) return null;
    const surface = path.ownerSVGElement.getBoundingClientRect();
    const len = path.getTotalLength();
    const [p, q] = [path.getPointAtLength(0), path.getPointAtLength(len)];
    const onBox = (pt, boxId) => {
      const el = document.querySelector(`#canvas-view .el[data-id="${boxId}"]`);
      if (!el) return false;
      const r = el.getBoundingClientRect();
      const [x0, y0, x1, y1] = [r.left - surface.left, r.top - surface.top, r.right - surface.left, r.bottom - surface.top];
      const e = 1.5;
      const inside = pt.x >= x0 - e && pt.x <= x1 + e && pt.y >= y0 - e && pt.y <= y1 + e;
      const border = Math.min(Math.abs(pt.x - x0), Math.abs(pt.x - x1), Math.abs(pt.y - y0), Math.abs(pt.y - y1)) <= e;
      return inside && border;
    };
    return { from: path.dataset.from, to: path.dataset.to, p: [p.x, p.y], q: [q.x, q.y],
      onFrom: onBox(p, path.dataset.from), onTo: onBox(q, path.dataset.to) };
  }, id);
}

// The "What changed" view: each answer's Board-Version is remembered; after
// the demo upstream edits the board (DEMO_EDIT, the curl line the demo
// prints), sending again gives a new version and Compare lists the edit.
async function checkChanges(page, shot) {
  const edit = process.env.DEMO_EDIT;
  check(isLoopback(edit || ""), `the demo's edit URL is known and on loopback (${edit})`);
  if (!isLoopback(edit || "")) return;
  await page.fill("#link", DEMO_LINK);
  await page.check("input[value=detail]");
  await page.click("#send");
  await page.waitForFunction(() => /^[0-9a-f]{32}$/.test(document.querySelector("#version").textContent));
  const first = await page.textContent("#version");
  check(true, `Board-Version read through CORS (${first})`);
  const edited = await fetch(edit, { method: "POST" });
  check(edited.ok, `the demo upstream edited the board (${edited.status})`);
  // The edit reaches the answer once the cached document expires or is
  // refetched; the demo's cache is short, so send until the version moves.
  const deadline = Date.now() + 90_000;
  let second = first;
  while (second === first && Date.now() < deadline) {
    await page.click("#send");
    await page.waitForFunction((v) => document.querySelector("#status").textContent !== "...", first);
    second = await page.textContent("#version");
    if (second === first) await page.waitForTimeout(500);
  }
  check(second !== first && /^[0-9a-f]{32}$/.test(second), `a new Board-Version after the edit (${second})`);
  await page.click("#tab-changes");
  check((await page.inputValue("#since")) === first, "Since is the version seen before the newest one");
  await page.click("#compare");
  await page.waitForFunction(() => /^\d{3}/.test(document.querySelector("#changes-meta").textContent));
  const meta = await page.textContent("#changes-meta");
  const list = await page.textContent("#changes-list");
  check(meta.startsWith("200") && meta.includes(first) && meta.includes(second), `the changes answer names both versions (${meta})`);
  check(/Added \(1\)/.test(list) && list.includes("Edited") && list.includes("demo upstream"),
    `the edit is listed as added, with its title (${list.slice(0, 160)})`);
  await page.screenshot({ path: shot("changes"), fullPage: true });
  await page.fill("#since", "f".repeat(32));
  await page.click("#compare");
  await page.waitForFunction(() => /^\d{3}/.test(document.querySelector("#changes-meta").textContent));
  check((await page.textContent("#changes-meta")).startsWith("410 VERSION_NOT_KEPT"), "a version never kept answers 410, said as such");

  // Live: an EventSource from now; the next edit shows without a reload,
  // within the poll interval (board_api.live.every, 15 s) and a load.
  await page.fill("#since", "");
  await page.check("#live");
  await page.waitForFunction(() => document.querySelector("#changes-meta").textContent.startsWith("live: at "),
    null, { timeout: 30_000 });
  const at = (await page.textContent("#changes-meta")).match(/[0-9a-f]{32}/)?.[0];
  check(at === second, `live starts at the board's version (${at})`);
  const again = await fetch(edit, { method: "POST" });
  check(again.ok, `the demo upstream edited the board again (${again.status})`);
  await page.waitForFunction(() => document.querySelector("#changes-meta").textContent.startsWith("live: from "),
    null, { timeout: 60_000 });
  const liveMeta = await page.textContent("#changes-meta");
  const liveList = await page.textContent("#changes-list");
  // The demo upstream's second edit rewrites the card its first one added.
  check(liveMeta.includes("from " + second) && /Changed \([1-9]/.test(liveList) && liveList.includes("Edited 2 times"),
    `the live view lists the edit without a reload (${liveMeta}; ${liveList.slice(0, 120)})`);
  await page.screenshot({ path: shot("live"), fullPage: true });
  await page.uncheck("#live");
}

// The Markdown view sends the same request with Accept: text/markdown and
// shows the answer as text, whatever its type.
async function checkMarkdown(page, shot, apiRequests) {
  const before = apiRequests.length;
  await page.click("#tab-markdown");
  await page.waitForFunction(() => /^\d{3} /.test(document.querySelector("#markdown-meta").textContent));
  const meta = await page.textContent("#markdown-meta");
  const text = await page.textContent("#markdown-text");
  // The title as the Markdown writes it: board text has its Markdown and
  // HTML characters escaped (`Lisbon & Porto` is `Lisbon \& Porto`).
  const markdownTitle = expectedTitle.replace(/[\\`*_[\]<>&|~#]/g, (c) => `\\${c}`);
  check(meta.startsWith("200 ") && text.includes(`# ${markdownTitle}\n`),
    `the Markdown view shows the answer as text, the title as a heading (${meta.slice(0, 70)})`);
  check(apiRequests.slice(before).some((r) => r.url.includes("/api/detail?") && r.accept === "text/markdown"),
    "the Markdown view asked for Accept: text/markdown");
  await page.screenshot({ path: shot("markdown"), fullPage: true });
}

// A constructed document with every new element type and hostile text,
// drawn through the "saved answer" box.
async function checkConstructed(page, shot) {
  await page.click("summary");
  await page.fill("#doc-json", JSON.stringify({ ok: true, data: constructedDocument() }));
  await page.click("#render-json");
  await page.waitForSelector('#canvas-view [data-id="c-left"]');
  await page.waitForFunction(() => Array.from(document.querySelectorAll("#canvas-view img")).every((i) => i.complete));
  const r = await page.evaluate(() => {
    const $ = (s) => document.querySelector(s);
    const left = $('#canvas-view [data-id="c-left"]').getBoundingClientRect();
    const right = $('#canvas-view [data-id="c-right"]').getBoundingClientRect();
    const swatch = $('#canvas-view [data-id="swatch"] .chip');
    const sketch = $('#canvas-view [data-id="sketch"] img');
    const hostile = $('#canvas-view [data-id="c-hostile"]');
    return {
      leftOfRight: left.right <= right.left,
      swatchColor: swatch && getComputedStyle(swatch).backgroundColor,
      swatchSize: swatch && swatch.getBoundingClientRect().height,
      swatchCaption: $('#canvas-view [data-id="swatch"]').textContent,
      sketchSrc: sketch && sketch.src.slice(0, 32),
      sketchW: sketch && sketch.naturalWidth,
      sketchShown: sketch && sketch.getBoundingClientRect().height,
      svgInDom: document.querySelectorAll("#canvas-view svg").length,
      scriptsInCanvas: document.querySelectorAll("#canvas-view script, #canvas-view iframe, #canvas-view object").length,
      hostileText: hostile.textContent,
      hostileImgs: hostile.querySelectorAll("img").length,
      pwned: window.__pwned === true,
      jsAnchors: document.querySelectorAll('a[href^="javascript:" i]').length,
      permissionAnchors: Array.from(document.querySelectorAll("#canvas-view a")).filter((a) => /[?&]p=/.test(a.href)).length,
      inlineLine: (Array.from(hostile.querySelectorAll("p")).find((q) => q.textContent.startsWith("see ")) || {}).textContent,
      anchorsToNonHttp: Array.from(document.querySelectorAll("#canvas-view a")).filter((a) => !/^https?:/.test(a.href)).length,
      badLinkTag: ($('#canvas-view [data-id="l-js"] .link-title') || {}).tagName,
      badMarkTag: ($('#canvas-view [data-id="c-hostile"] .unsafe-link') || {}).tagName,
      docText: $('#canvas-view [data-id="doc"]').textContent,
      badLineDrawn: document.querySelectorAll('#canvas-view path[data-id="line-bad"]').length,
      pointLine: ($('#canvas-view path[data-id="line-points"]') || { getAttribute: () => null }).getAttribute("d"),
      note: $("#canvas-note").textContent,
      unknownLine: document.querySelectorAll('#canvas-view path[data-id="line-unknown"]').length,
    };
  });
  check(r.leftOfRight, "constructed board: the card with the smaller x is left of the other");
  check(r.swatchColor === "rgb(230, 57, 70)" && r.swatchSize > 40 && r.swatchCaption.includes("Tram red"),
    `a colour swatch is drawn in its colour with its caption (${r.swatchColor})`);
  check(r.sketchSrc === "data:image/svg+xml;charset=utf-8" && r.sketchW > 0 && r.sketchShown > 20,
    `a sketch is visible as a data: image (${r.sketchW}px wide)`);
  check(r.svgInDom === 1 && r.scriptsInCanvas === 0, "the drawing's SVG never became DOM (only the lines overlay is an <svg>)");
  check(r.hostileText.includes("<img src=x onerror=") && r.hostileImgs === 0 && !r.pwned,
    "a card whose text holds <img src=x onerror=...> shows it as text");
  check(r.jsAnchors === 0 && r.anchorsToNonHttp === 0 && r.badLinkTag === "SPAN" && r.badMarkTag === "SPAN",
    "javascript: links are text, not anchors");
  check(r.inlineLine === "see <b>Evil board</b> and Shared board with a chip." && r.permissionAnchors === 0,
    `board links to a script or with a permission id are their titles as text; an unknown inline node is its label (${JSON.stringify(r.inlineLine)})`);
  const before = page.url();
  await page.click('#canvas-view [data-id="l-js"] .link-title');
  await page.click('#canvas-view [data-id="c-hostile"] .unsafe-link');
  check(page.url() === before && !(await page.evaluate(() => window.__pwned === true)), "clicking a javascript: link does nothing");
  check(r.docText.includes("Packing list") && r.docText.includes("Passport"), "a document is a page tile with its title and first lines");
  const line = await lineEnds(page, "line-cards");
  check(line && line.onFrom && line.onTo && line.from === "c-left" && line.to === "c-right",
    `a LINE is drawn between two cards, its ends on the two boxes (${JSON.stringify(line)})`);
  check(r.badLineDrawn === 0 && /could not be placed/.test(r.note), `a line that cannot be placed is not drawn (${r.note})`);
  check(/^M [\d.]+ [\d.]+ L [\d.]+ [\d.]+$/.test(r.pointLine || ""), `a line between two points is drawn (${r.pointLine})`);
  check(r.unknownLine === 1, "a LINE that still arrives as UNKNOWN is drawn from its raw content");
  const proto = await page.evaluate(() => ({
    card: (document.querySelector('#canvas-view [data-id="c-proto"]') || {}).innerText || "",
    node: (document.querySelector('#canvas-view [data-id="n-proto"]') || {}).innerText || "",
  }));
  check(["constructor", "__proto__", "hasOwnProperty", "toString"].every((t) => proto.card.includes(`Block typed ${t}`)) &&
    proto.node.includes("A node typed constructor"),
    "Draft.js blocks, styles and a node typed after Object.prototype's members draw as text, no error");
  // Wide enough to see the whole constructed board at 75%.
  await page.setViewportSize({ width: 1600, height: 1000 });
  await page.selectOption("#canvas-zoom", "0.75");
  await page.screenshot({ path: shot("constructed"), fullPage: true });
}

console.log(failures.length ? `\n${failures.length} check(s) failed` : "\nall browser checks passed");
process.exit(failures.length ? 1 : 0);
