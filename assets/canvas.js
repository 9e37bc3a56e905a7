// The playground's canvas view: a BoardDocument drawn the way Milanote lays a
// board out: positions and sizes are grid units, drawn at UNIT px each.
// Inlined into playground.html by the server after richtext.js (one
// <script> block, allowed by its hash), whose helpers draw the text. Board
// content is written by strangers: every string reaches the DOM through
// textContent or one attribute at a time, only http(s) URLs become link
// targets or image sources, and a drawing's SVG is only ever an <img> with
// a data: URL built here.
"use strict";
const BoardCanvas = (function () {
  const SVG_NS = "http://www.w3.org/2000/svg";
  const MAX_DEPTH = 48; // nesting deeper than this is not drawn
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

  const { el, obj, own, str, num, safeUrl, hostOf, link, checkbox, richText } = BoardText;
  const removed = (node) => obj(node.location) && typeof node.location.section === "string" &&
    REMOVED.has(node.location.section.toUpperCase());

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

  // ---- the board as a file ----

  // The board of `link` as a JSON Canvas file (GET <base>/api/canvas),
  // saved under the name the answer gives it; what happened goes to
  // `note`, as text. An error is shown, not saved.
  async function download(base, link, note) {
    note.textContent = "loading...";
    const q = new URLSearchParams();
    q.set("url", link);
    let res;
    let blob;
    try {
      res = await fetch(base + "/api/canvas?" + q.toString());
      blob = await res.blob();
    } catch (e) {
      note.textContent = "request failed: " + e.message;
      return;
    }
    if (!res.ok) {
      let message = "HTTP " + res.status;
      try {
        const body = JSON.parse(await blob.text());
        message += " " + body.error.code + ": " + body.error.message;
      } catch (e) { /* not our error body: the status says it */ }
      note.textContent = message;
      return;
    }
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = fileName(res.headers.get("Content-Disposition"));
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 60000);
    note.textContent = "saved " + a.download;
  }

  // The file name of a Content-Disposition (RFC 6266's UTF-8 form first);
  // board.canvas when another origin does not expose the header.
  function fileName(header) {
    const h = header || "";
    const extended = /filename\*=UTF-8''([^;]+)/i.exec(h);
    if (extended) {
      try { return decodeURIComponent(extended[1]); } catch (e) { /* fall back to the plain name */ }
    }
    const plain = /filename="([^"]*)"/i.exec(h);
    return plain && plain[1] ? plain[1] : "board.canvas";
  }

  return { create, download, safeUrl, UNIT };
})();
