// The playground's text helpers: DOM built from strings one text node or
// attribute at a time, web-only links, and rich text (TipTap, Draft.js,
// plain) drawn as the web app shows it. Inlined into playground.html by the
// server ahead of canvas.js, which draws board elements with it. Board
// content is written by strangers: it reaches the DOM only through
// textContent, createTextNode or one attribute at a time.
"use strict";
const BoardText = (function () {
  const MAX_DEPTH = 48; // rich text deeper than this is not drawn

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
    else for (const node of blocks) box.appendChild(tiptap(node, 0, false));
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

  // TipTap nodes whose children are inline: text, marks, mentions, board
  // links and hard breaks, drawn in the line where they stand.
  const INLINE_PARENTS = new Set(["paragraph", "heading", "codeBlock", "smallText"]);

  // A TipTap node; `inline` when its parent holds inline content, where a
  // node this page does not know is drawn as its text, in its line.
  function tiptap(node, depth, inline) {
    if (!obj(node) || depth > MAX_DEPTH) return document.createTextNode("");
    const attrs = obj(node.attrs) ? node.attrs : {};
    const kids = (parent) => {
      const inner = INLINE_PARENTS.has(node.type);
      if (Array.isArray(node.content)) for (const c of node.content) parent.appendChild(tiptap(c, depth + 1, inner));
      return parent;
    };
    switch (node.type) {
      case "text": return marked(str(node.text), node.marks);
      case "hardBreak": return el("br");
      case "mention": {
        // One @, whether or not the label starts with one.
        const label = str(attrs.label).trim();
        return marked(label && !label.startsWith("@") ? "@" + label : label, node.marks);
      }
      case "inlineBoardLink": return boardLink(attrs);
      case "paragraph": return kids(el("p"));
      case "smallText": return kids(el("p", "small"));
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
      case "callout": return kids(el("blockquote", "callout"));
      case "codeBlock": return kids(el("pre"));
      case "horizontalRule": return el("hr");
      default:
        if (typeof node.text === "string") return marked(node.text, node.marks);
        if (inline) return kids(el("span", "", Array.isArray(node.content) ? undefined : inlineText(attrs)));
        return kids(el("div"));
    }
  }

  // What an inline node this page does not know says, when it has no text
  // or content of its own: its label, title or text attribute.
  function inlineText(attrs) {
    for (const key of ["label", "title", "text", "name"]) if (typeof attrs[key] === "string") return attrs[key];
    return "";
  }

  // Whether a URL carries a permission id (a share link's `p` parameter):
  // such a link would hand the board to whoever follows it, so it is text.
  function carriesPermission(value) {
    if (typeof value !== "string") return false;
    try { return new URL(value.trim(), "https://board.invalid/").searchParams.has("p"); } catch (e) { return false; }
  }

  // A board link as its title: a link when its URL is a web URL that holds
  // no permission id, else the title as text.
  function boardLink(attrs) {
    const title = str(attrs.title).trim() || str(attrs.url) || "board";
    const url = carriesPermission(attrs.url) ? null : safeUrl(attrs.url);
    if (!url) return el("span", "board-link", title);
    const a = link(url, "board-link");
    a.textContent = title;
    return a;
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

  return { el, obj, own, str, num, safeUrl, hostOf, link, checkbox, richText, carriesPermission, MAX_DEPTH };
})();
