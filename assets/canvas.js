// The playground's canvas view: a BoardDocument drawn the way Milanote lays a
// board out: positions and sizes are grid units, drawn at UNIT px each. Inlined into playground.html by the server (one <script> block,
// allowed by its hash). Board content is written by strangers: every string
// reaches the DOM through textContent or one attribute at a time, only
// http(s) URLs become link targets or image sources, and a drawing's SVG is
// only ever an <img> with a data: URL built here.
"use strict";
const BoardCanvas = (function () {
  const SVG_NS = "http://www.w3.org/2000/svg";
  const MAX_DEPTH = 48; // rich text and nesting deeper than this is not drawn
  const PAD = 24; // px around the placed elements
  // Milanote stores positions and sizes in grid units. One unit is this many
  // px at 100 %: the web app draws a default card or column (34 units) 304 px
  // wide, so a unit is about 9 px. Positions, widths, heights and line
  // points are all scaled by it, and by nothing else.
  const UNIT = 304 / 34;
  // Default box widths in grid units, for elements that store none (the
  // web app's defaults: a card or column is 34); 0: as wide as the content.
  const WIDTH = {
    CARD: 34, COLUMN: 34, TASK_LIST: 34, TASK: 0, TABLE: 0, IMAGE: 34, LINK: 34, FILE: 26,
    BOARD: 14, COMMENT_THREAD: 30, DOCUMENT: 24, COLOR_SWATCH: 16, SKETCH: 30,
    ANNOTATION: 26, SKELETON: 18, UNKNOWN: 24,
  };
  // Sections whose elements are not the board (the trash, deleted ones):
  // never drawn, whatever their parent.
  const REMOVED = new Set(["TRASH", "DELETED"]);
  // Types the server may still send as UNKNOWN with their raw content.
  const ADAPTABLE = new Set(["DOCUMENT", "COLOR_SWATCH", "SKETCH", "ANNOTATION", "LINE"]);

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  const obj = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
  // A lookup in one of this script's tables by a key that comes from a
  // board: own properties only, so "constructor" or "__proto__" never
  // reaches Object.prototype.
  const own = (table, key) => (typeof key === "string" && Object.prototype.hasOwnProperty.call(table, key) ? table[key] : undefined);
  const removed = (node) => obj(node.location) && typeof node.location.section === "string" &&
    REMOVED.has(node.location.section.toUpperCase());
  const str = (v) => (typeof v === "string" ? v : "");
  function num(v) {
    if (typeof v === "number") return Number.isFinite(v) ? v : null;
    if (typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v))) return Number(v);
    return null;
  }

  // Only absolute http: and https: URLs; anything else (javascript:, data:
  // from the board, relative paths) is null and gets shown as text.
  function safeUrl(value) {
    if (typeof value !== "string") return null;
    let u;
    try { u = new URL(value.trim()); } catch (e) { return null; }
    return u.protocol === "http:" || u.protocol === "https:" ? u.href : null;
  }
  function hostOf(url) {
    try { return new URL(url).host; } catch (e) { return ""; }
  }

  function link(href, cls) {
    const url = safeUrl(href);
    if (!url) {
      const span = el("span", "unsafe-link" + (cls ? " " + cls : ""));
      if (typeof href === "string") span.title = "not a web link, not followed: " + href;
      return span;
    }
    const a = el("a", cls);
    a.href = url;
    a.target = "_blank";
    a.rel = "noopener noreferrer nofollow";
    return a;
  }

  function checkbox(checked) {
    const box = el("input");
    box.type = "checkbox";
    box.checked = Boolean(checked);
    box.disabled = true;
    return box;
  }

  // ---- rich text: TipTap/ProseMirror nodes, Draft.js blocks, plain text ----

  function richText(rt, cls) {
    const box = el("div", "rt" + (cls ? " " + cls : ""));
    const blocks = obj(rt) && Array.isArray(rt.blocks) ? rt.blocks : [];
    if (blocks.some(isDraftBlock)) draftBlocks(blocks, box);
    else for (const node of blocks) box.appendChild(tiptap(node, 0));
    if (!box.textContent.trim() && obj(rt) && typeof rt.plainText === "string") {
      box.replaceChildren();
      for (const line of rt.plainText.split("\n")) box.appendChild(el("p", "", line));
    }
    return box;
  }

  function isDraftBlock(b) {
    return obj(b) && typeof b.text === "string" && !Array.isArray(b.content) &&
      (Array.isArray(b.inlineStyleRanges) || typeof b.key === "string");
  }

  function tiptap(node, depth) {
    if (!obj(node) || depth > MAX_DEPTH) return document.createTextNode("");
    const attrs = obj(node.attrs) ? node.attrs : {};
    const kids = (parent) => {
      if (Array.isArray(node.content)) for (const c of node.content) parent.appendChild(tiptap(c, depth + 1));
      return parent;
    };
    switch (node.type) {
      case "text": return marked(str(node.text), node.marks);
      case "hardBreak": return el("br");
      case "paragraph": return kids(el("p"));
      case "heading": {
        const level = Math.min(3, Math.max(1, Math.floor(num(attrs.level) || 1)));
        return kids(el("h" + (level + 3)));
      }
      case "bulletList": return kids(el("ul"));
      case "orderedList": {
        const ol = el("ol");
        const start = num(attrs.start);
        if (start !== null && start >= 0 && start < 1e9) ol.start = Math.floor(start);
        return kids(ol);
      }
      case "listItem": return kids(el("li"));
      case "taskList": return kids(el("ul", "rt-tasks"));
      case "taskItem": {
        const li = el("li");
        li.appendChild(checkbox(attrs.checked));
        return kids(li);
      }
      case "blockquote": return kids(el("blockquote"));
      case "codeBlock": return kids(el("pre"));
      case "horizontalRule": return el("hr");
      default:
        if (typeof node.text === "string") return marked(node.text, node.marks);
        return kids(el("div"));
    }
  }

  function marked(text, marks) {
    let node = document.createTextNode(text);
    for (const m of Array.isArray(marks) ? marks : []) {
      const type = obj(m) ? m.type : "";
      let wrap = null;
      if (type === "bold" || type === "strong") wrap = el("strong");
      else if (type === "italic" || type === "em") wrap = el("em");
      else if (type === "strike") wrap = el("s");
      else if (type === "underline") wrap = el("u");
      else if (type === "code") wrap = el("code");
      else if (type === "link") wrap = link(obj(m.attrs) ? m.attrs.href : null);
      if (wrap) { wrap.appendChild(node); node = wrap; }
    }
    return node;
  }

  const DRAFT_TAGS = {
    "header-one": "h4", "header-two": "h5", "header-three": "h6", "header-four": "h6",
    blockquote: "blockquote", "code-block": "pre",
  };
  const DRAFT_LISTS = { "unordered-list-item": "ul", "ordered-list-item": "ol", "checkable-list-item": "ul" };
  const DRAFT_STYLES = { BOLD: "bold", ITALIC: "italic", STRIKETHROUGH: "strike", UNDERLINE: "underline", CODE: "code" };

  function draftBlocks(blocks, box) {
    let list = null;
    let listType = "";
    for (const b of blocks) {
      if (!obj(b)) continue;
      const type = str(b.type);
      const line = draftLine(b);
      const listTag = own(DRAFT_LISTS, type);
      if (listTag) {
        if (!list || listType !== type) {
          list = el(listTag, type === "checkable-list-item" ? "rt-tasks" : "");
          listType = type;
          box.appendChild(list);
        }
        const li = el("li");
        if (type === "checkable-list-item") li.appendChild(checkbox(obj(b.data) && b.data.checked));
        li.appendChild(line);
        list.appendChild(li);
        continue;
      }
      list = null;
      const block = el(own(DRAFT_TAGS, type) || "p");
      block.appendChild(line);
      box.appendChild(block);
    }
  }

  // One Draft.js block's text with its inline styles (offsets are UTF-16 units).
  function draftLine(b) {
    const text = str(b.text);
    const out = document.createDocumentFragment();
    const ranges = Array.isArray(b.inlineStyleRanges) ? b.inlineStyleRanges.filter(obj) : [];
    if (!ranges.length || text.length > 20000) {
      out.appendChild(document.createTextNode(text));
      return out;
    }
    const styleAt = (i) => ranges
      .filter((r) => num(r.offset) !== null && num(r.length) !== null && i >= r.offset && i < r.offset + r.length)
      .map((r) => str(r.style)).sort().join(",");
    let start = 0;
    while (start < text.length) {
      const key = styleAt(start);
      let end = start + 1;
      while (end < text.length && styleAt(end) === key) end++;
      const marks = key ? key.split(",").map((s) => ({ type: own(DRAFT_STYLES, s) || "" })) : [];
      out.appendChild(marked(text.slice(start, end), marks));
      start = end;
    }
    return out;
  }

  // ---- element boxes ----

  // A node of the new types that arrives as UNKNOWN carries its raw content:
  // read the same fields from there.
  function adapt(node) {
    if (node.type !== "UNKNOWN" || !ADAPTABLE.has(node.elementType) || !obj(node.content)) return node;
    const c = node.content;
    const color = typeof c.color === "string" ? c.color : obj(c.color) ? str(c.color.value) : "";
    // Spread, not Object.assign: an own "__proto__" key of the board's is
    // copied as data, never set as the object's prototype.
    return {
      ...node,
      type: node.elementType, title: str(c.title), start: c.start, end: c.end, control: c.control,
      lineStyle: c.lineStyle, lineColor: color, color, drawing: c.drawing,
    };
  }

  function position(node) {
    const p = obj(node.location) && obj(node.location.position) ? node.location.position : null;
    if (!p) return null;
    const x = num(p.x);
    const y = num(p.y);
    return x === null || y === null ? null : { x, y };
  }

  // A width or height in grid units the board stored: a positive number
  // within reason, else null.
  function size(v) {
    const n = num(v);
    return n !== null && n > 0 && n < 4000 ? n : null;
  }
  const px = (units) => Math.round(units * UNIT * 10) / 10 + "px";

  function title(node, fallback) {
    return el("div", "el-title", str(node.title) || fallback);
  }

  function fileBox(name, url) {
    const box = el("div", "file-box");
    box.appendChild(el("div", "file-name", name || "image"));
    if (url) box.appendChild(el("div", "raw-url", url));
    return box;
  }

  function image(img, name, alt) {
    const url = safeUrl(obj(img) ? img.url : null);
    if (!url) return fileBox(name, obj(img) ? str(img.url) : "");
    const tag = el("img");
    tag.alt = alt || name || "";
    tag.referrerPolicy = "no-referrer";
    const w = num(img.width);
    const h = num(img.height);
    if (w && h && w > 0 && h > 0) tag.style.aspectRatio = w + " / " + h;
    tag.addEventListener("error", () => tag.replaceWith(fileBox(name, url)), { once: true });
    tag.src = url;
    return tag;
  }

  function formatBytes(n) {
    if (num(n) === null) return "";
    const units = ["B", "KB", "MB", "GB"];
    let v = num(n);
    let i = 0;
    while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    return (i ? v.toFixed(1) : String(v)) + " " + units[i];
  }

  // The drawing's SVG as an image only: an <img> never runs the scripts an
  // SVG may hold, and the SVG text never becomes DOM of this page.
  function drawing(node) {
    const d = obj(node.drawing) ? node.drawing : {};
    const svg = typeof d.svg === "string" ? d.svg : "";
    if (!svg || svg.length > 2000000) return el("div", "file-box", "drawing (no picture)");
    const img = el("img", "drawing");
    img.alt = node.type === "ANNOTATION" ? "annotation" : "sketch";
    img.addEventListener("error", () => img.replaceWith(el("div", "file-box", "drawing (cannot be shown)")), { once: true });
    img.src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(svg);
    return img;
  }

  function box(node, ctx, depth) {
    const type = str(node.type) || "UNKNOWN";
    const known = own(WIDTH, type) !== undefined;
    const b = el(type === "BOARD" ? "button" : "div", "el el-" + (known ? type : "UNKNOWN"));
    if (typeof node.id === "string") {
      b.dataset.id = node.id;
      ctx.boxes.set(node.id, b);
    }
    b.dataset.type = type;
    const width = size(node.width) || (known ? own(WIDTH, type) : WIDTH.UNKNOWN);
    if (width) b.style.width = px(width);
    const height = size(node.height);
    if (height) b.style.minHeight = px(height);
    const children = Array.isArray(node.children) ? node.children.filter(obj).filter((c) => !removed(c)).map(adapt) : [];
    const stack = (into) => {
      for (const child of children) {
        if (child.type === "LINE") ctx.lines.push(child);
        else if (depth < MAX_DEPTH) into.appendChild(box(child, ctx, depth + 1));
      }
    };
    switch (type) {
      case "CARD":
        if (typeof node.background === "string") b.style.backgroundColor = node.background;
        if (node.transparent === true) b.classList.add("transparent");
        b.appendChild(richText(node.richText));
        break;
      case "COLUMN":
      case "TASK_LIST": {
        if (type === "COLUMN" || node.showTitle !== false) b.appendChild(title(node, type === "COLUMN" ? "Column" : "Tasks"));
        const inner = el("div", "stack");
        stack(inner);
        b.appendChild(inner);
        break;
      }
      case "TASK":
        b.classList.toggle("done", node.completed === true);
        b.appendChild(checkbox(node.completed === true));
        b.appendChild(richText(node.richText));
        if (typeof node.dueDate === "string") b.appendChild(el("div", "muted small", "due " + node.dueDate));
        break;
      case "IMAGE": {
        const file = obj(node.file) ? node.file : {};
        b.appendChild(image(node.image, str(file.filename) || "image"));
        break;
      }
      case "FILE": {
        const file = obj(node.file) ? node.file : {};
        const name = str(file.filename) || str(node.title) || "file";
        if (obj(node.previewImage) && safeUrl(node.previewImage.url)) b.appendChild(image(node.previewImage, name, "preview of " + name));
        const head = link(file.url, "file-name");
        head.textContent = name;
        b.appendChild(head);
        b.appendChild(el("div", "muted small", [str(file.extension).toUpperCase(), formatBytes(file.sizeBytes)].filter(Boolean).join(" · ")));
        break;
      }
      case "LINK": {
        const url = str(node.url);
        const a = link(url, "link-title");
        a.textContent = str(node.title) || url || "link";
        b.appendChild(a);
        const safe = safeUrl(url);
        b.appendChild(el("div", safe ? "muted small" : "raw-url", safe ? hostOf(safe) : url));
        if (node.caption && node.showCaption !== false) b.appendChild(richText(node.caption, "caption"));
        break;
      }
      case "TABLE": {
        const table = el("table", "grid");
        const rows = obj(node.table) && Array.isArray(node.table.rows) ? node.table.rows : [];
        for (const row of rows.slice(0, 500)) {
          const tr = el("tr");
          for (const cell of Array.isArray(row) ? row.slice(0, 100) : []) {
            const td = el("td");
            if (obj(cell)) {
              if (typeof cell.background === "string") td.style.backgroundColor = cell.background;
              if (obj(cell.richText) && cell.richText.plainText) td.appendChild(richText(cell.richText));
              else td.textContent = cell.value === undefined || cell.value === null ? "" : String(cell.value);
            }
            tr.appendChild(td);
          }
          table.appendChild(tr);
        }
        b.appendChild(table);
        break;
      }
      case "COMMENT_THREAD":
        for (const c of Array.isArray(node.comments) ? node.comments.filter(obj) : []) {
          const one = el("div", "comment");
          one.appendChild(richText(c.richText));
          if (typeof c.createdAt === "string") one.appendChild(el("div", "muted small", c.createdAt.slice(0, 10)));
          b.appendChild(one);
        }
        if (!b.childNodes.length) b.appendChild(el("div", "muted", "comments"));
        break;
      case "BOARD": {
        b.type = "button";
        const tile = el("div", "board-icon");
        if (typeof node.color === "string") tile.style.backgroundColor = node.color;
        b.appendChild(tile);
        b.appendChild(title(node, "Untitled board"));
        b.appendChild(el("div", "muted small", node.childrenLoaded === false
          ? "not loaded" + (node.unloadedReason ? ": " + node.unloadedReason : "")
          : children.length + " element" + (children.length === 1 ? "" : "s")));
        b.addEventListener("click", () => ctx.open(node));
        break;
      }
      case "DOCUMENT":
        b.appendChild(title(node, "Untitled document"));
        b.appendChild(richText(node.richText, "first-lines"));
        break;
      case "COLOR_SWATCH": {
        const chip = el("div", "chip");
        if (typeof node.color === "string") chip.style.backgroundColor = node.color;
        b.appendChild(chip);
        b.appendChild(el("div", "small mono", str(node.color)));
        if (node.caption) b.appendChild(richText(node.caption, "caption"));
        break;
      }
      case "SKETCH":
      case "ANNOTATION":
        b.appendChild(drawing(node));
        break;
      case "SKELETON":
        b.appendChild(el("div", "muted", "not shared"));
        break;
      default: {
        b.appendChild(el("div", "badge", str(node.elementType) || type));
        if (node.title) b.appendChild(title(node, ""));
        else if (obj(node.richText)) b.appendChild(richText(node.richText));
        if (children.length) {
          const inner = el("div", "stack");
          stack(inner);
          b.appendChild(inner);
        }
      }
    }
    return b;
  }

  // ---- lines ----

  // An end names an element (its id, or an object with elementId or id) or
  // a point (numeric x and y, board coordinates); anything else is null.
  function lineEnd(end, ctx) {
    const id = typeof end === "string" ? end : obj(end) ? (str(end.elementId) || str(end.id)) : "";
    if (id) {
      const target = ctx.boxes.get(id);
      return target ? { rect: rectOf(target, ctx.surface) } : null;
    }
    if (obj(end) && num(end.x) !== null && num(end.y) !== null) {
      return { point: at(ctx, num(end.x), num(end.y)) };
    }
    return null;
  }

  // Board coordinates (grid units) to px on the surface.
  function at(ctx, x, y) {
    return { x: (x - ctx.minX) * UNIT + PAD, y: (y - ctx.minY) * UNIT + PAD };
  }

  function rectOf(target, surface) {
    const a = target.getBoundingClientRect();
    const s = surface.getBoundingClientRect();
    return { x: a.left - s.left, y: a.top - s.top, w: a.width, h: a.height };
  }

  const center = (end) => end.point || { x: end.rect.x + end.rect.w / 2, y: end.rect.y + end.rect.h / 2 };

  // Where the segment from the end's centre toward `toward` leaves its box.
  function attach(end, toward) {
    if (end.point) return end.point;
    const c = center(end);
    const dx = toward.x - c.x;
    const dy = toward.y - c.y;
    if (!dx && !dy) return c;
    const s = Math.min(dx ? end.rect.w / 2 / Math.abs(dx) : Infinity, dy ? end.rect.h / 2 / Math.abs(dy) : Infinity);
    return { x: c.x + dx * s, y: c.y + dy * s };
  }

  function lineStyleOf(node) {
    const s = node.lineStyle;
    const color = obj(s) ? str(s.color) : str(node.lineColor);
    const dash = s === "dashed" || s === "dotted" || (obj(s) && (s.dashed === true || s.style === "dashed" || s.style === "dotted"));
    return { color: /^#[0-9a-fA-F]{3,8}$|^[a-zA-Z]{3,20}$/.test(color) ? color : "#5b6474", dash };
  }

  function drawLines(ctx, svg) {
    let skipped = 0;
    const fix = (v) => Math.round(v * 10) / 10;
    for (const node of ctx.lines) {
      const a = lineEnd(node.start, ctx);
      const b = lineEnd(node.end, ctx);
      if (!a || !b) { skipped++; continue; }
      const control = obj(node.control) && num(node.control.x) !== null && num(node.control.y) !== null
        ? at(ctx, num(node.control.x), num(node.control.y)) : null;
      const p = attach(a, control || center(b));
      const q = attach(b, control || center(a));
      const path = document.createElementNS(SVG_NS, "path");
      path.setAttribute("d", "M " + fix(p.x) + " " + fix(p.y) +
        (control ? " Q " + fix(control.x) + " " + fix(control.y) : " L") + " " + fix(q.x) + " " + fix(q.y));
      const style = lineStyleOf(node);
      path.setAttribute("stroke", style.color);
      if (style.dash) path.setAttribute("stroke-dasharray", "6 4");
      path.setAttribute("marker-end", "url(#arrow)");
      path.setAttribute("class", "line");
      if (typeof node.id === "string") path.dataset.id = node.id;
      const name = (end) => (typeof end === "string" ? end : obj(end) ? str(end.elementId) || str(end.id) : "");
      if (name(node.start)) path.dataset.from = name(node.start);
      if (name(node.end)) path.dataset.to = name(node.end);
      svg.appendChild(path);
    }
    return skipped;
  }

  function svgOverlay() {
    const svg = document.createElementNS(SVG_NS, "svg");
    svg.setAttribute("class", "lines");
    const defs = document.createElementNS(SVG_NS, "defs");
    const marker = document.createElementNS(SVG_NS, "marker");
    for (const [k, v] of [["id", "arrow"], ["viewBox", "0 0 10 10"], ["refX", "9"], ["refY", "5"],
      ["markerWidth", "7"], ["markerHeight", "7"], ["orient", "auto-start-reverse"]]) marker.setAttribute(k, v);
    const head = document.createElementNS(SVG_NS, "path");
    head.setAttribute("d", "M 0 0 L 10 5 L 0 10 z");
    head.setAttribute("fill", "#5b6474");
    marker.appendChild(head);
    defs.appendChild(marker);
    svg.appendChild(defs);
    return svg;
  }

  // ---- the view ----

  // parts: { view, crumbs, back, note, zoom }: elements of the page to draw into.
  function create(parts) {
    let stack = [];
    let dirty = false;
    let visible = false;

    function open(node) {
      stack.push(node);
      draw();
    }

    function crumbs() {
      parts.crumbs.replaceChildren();
      stack.forEach((node, i) => {
        if (i) parts.crumbs.appendChild(el("span", "muted", " / "));
        parts.crumbs.appendChild(el("span", i === stack.length - 1 ? "crumb current" : "crumb", str(node.title) || "Untitled board"));
      });
      parts.back.disabled = stack.length < 2;
    }

    function draw() {
      dirty = !visible;
      if (dirty) return;
      crumbs();
      parts.view.replaceChildren();
      parts.note.textContent = "";
      const board = stack[stack.length - 1];
      if (!board) {
        parts.view.appendChild(el("p", "muted", "No board in this answer to draw."));
        return;
      }
      const surface = el("div", "surface");
      parts.view.appendChild(surface);
      const svg = svgOverlay();
      surface.appendChild(svg);
      const ctx = { boxes: new Map(), lines: [], open, surface, minX: 0, minY: 0 };
      const children = Array.isArray(board.children) ? board.children.filter(obj).filter((c) => !removed(c)).map(adapt) : [];
      const placed = [];
      const loose = [];
      for (const child of children) {
        if (child.type === "LINE") ctx.lines.push(child);
        else if (position(child)) placed.push(child);
        else loose.push(child);
      }
      if (placed.length) {
        ctx.minX = Math.min(...placed.map((n) => position(n).x));
        ctx.minY = Math.min(...placed.map((n) => position(n).y));
      }
      for (const node of placed) {
        const b = box(node, ctx, 0);
        const p = position(node);
        b.classList.add("placed");
        const corner = at(ctx, p.x, p.y);
        b.style.left = corner.x + "px";
        b.style.top = corner.y + "px";
        surface.appendChild(b);
      }
      const bottom = () => Math.max(PAD, ...Array.from(surface.children, (c) => (c.offsetTop || 0) + (c.offsetHeight || 0)));
      if (loose.length) {
        const row = el("div", "loose");
        row.style.top = (placed.length ? bottom() + PAD : PAD) + "px";
        row.appendChild(el("div", "muted small loose-note", placed.length
          ? "Without a position in this answer:" : "This answer has no positions (a pruned view?): elements in order."));
        for (const node of loose) row.appendChild(box(node, ctx, 0));
        surface.appendChild(row);
      }
      const right = Math.max(0, ...Array.from(surface.children, (c) => (c.offsetLeft || 0) + (c.offsetWidth || 0)));
      const width = right + PAD;
      const height = bottom() + PAD;
      surface.style.width = width + "px";
      surface.style.height = height + "px";
      svg.setAttribute("width", String(width));
      svg.setAttribute("height", String(height));
      const skipped = drawLines(ctx, svg);
      const notes = [];
      if (board.childrenLoaded === false) notes.push("This board was not loaded" + (board.unloadedReason ? " (" + board.unloadedReason + ")" : "") + ".");
      if (!children.length && board.childrenLoaded !== false) notes.push("No elements in this answer (an outline or a pruned view shows what it has).");
      if (skipped) notes.push(skipped + " line" + (skipped === 1 ? "" : "s") + " could not be placed.");
      parts.note.textContent = notes.join(" ");
      applyZoom();
    }

    // Zoom scales the drawn surface as a whole, after the lines were measured.
    function applyZoom() {
      const surface = parts.view.querySelector(".surface");
      const z = Number(parts.zoom.value);
      if (surface) surface.style.zoom = z > 0 && z <= 1 ? String(z) : "1";
    }
    parts.zoom.addEventListener("change", applyZoom);

    parts.back.addEventListener("click", () => {
      if (stack.length > 1) { stack.pop(); draw(); }
    });

    return {
      // Draw `doc` (a BoardDocument, or null) from its root board.
      show(doc) {
        stack = obj(doc) && obj(doc.board) ? [doc.board] : [];
        draw();
      },
      // The view is measured while drawn, so it draws only while visible.
      setVisible(on) {
        visible = on;
        if (on && dirty) draw();
      },
    };
  }

  return { create, safeUrl, UNIT };
})();
