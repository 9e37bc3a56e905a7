// A BoardDocument the browser test draws through the playground's "saved
// answer" box: every element type the canvas draws beyond the demo boards
// (DOCUMENT, COLOR_SWATCH, SKETCH, ANNOTATION, LINE in each shape of end),
// in their normalized shapes, plus hostile text and links. One LINE is still
// an UNKNOWN with raw content, as servers without those types send it.
// Positions are grid units (about 9 px each), as Milanote stores them. A
// card whose Draft.js blocks, styles and node types are named after
// Object.prototype's members must draw like any other.
const at = (x, y) => ({ parentId: "b-root", section: "canvas", position: { x, y } });
const para = (...content) => ({ type: "paragraph", content });
const text = (t, marks) => (marks ? { type: "text", text: t, marks } : { type: "text", text: t });
const rich = (blocks, plainText) => ({ blocks, plainText });
const node = (id, type, x, y, fields) => Object.assign({ id, type, location: at(x, y), children: [] }, fields);

const HOSTILE = "<img src=x onerror=window.__pwned=true>";
const SKETCH_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" width="220" height="130" viewBox="0 0 220 130">' +
  "<script>window.__pwned=true</script>" +
  '<rect x="4" y="4" width="212" height="122" rx="10" fill="#fff8e1" stroke="#e8b730" stroke-width="3"/>' +
  '<path d="M 20 110 C 70 10, 150 10, 200 110" stroke="#2f5bd3" stroke-width="7" fill="none"/>' +
  '<circle cx="110" cy="45" r="14" fill="#e63946"/></svg>';
const NOTE_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" width="160" height="60">' +
  '<path d="M 10 50 Q 80 0 150 50" stroke="#17803d" stroke-width="5" fill="none"/></svg>';

export function constructedDocument() {
  return {
    version: 1,
    source: { provider: "milanote", boardId: "b-root" },
    fetchedAt: "2027-04-01T10:00:00.000Z",
    board: {
      id: "b-root",
      type: "BOARD",
      title: "Constructed: every new element type",
      childrenLoaded: true,
      location: {},
      children: [
        node("c-left", "CARD", 4, 4, {
          richText: rich([para(text("Left card, "), text("bold", [{ type: "bold" }]), text(" and "),
            text("a link", [{ type: "link", attrs: { href: "https://example.org/left" } }]))], "Left card, bold and a link"),
        }),
        node("c-right", "CARD", 62, 10, {
          richText: rich([{ key: "a1", type: "unstyled", text: "Right card (Draft.js)", depth: 0,
            inlineStyleRanges: [{ offset: 0, length: 5, style: "ITALIC" }], entityRanges: [], data: {} }], "Right card (Draft.js)"),
        }),
        node("c-hostile", "CARD", 4, 36, {
          richText: rich([para(text(HOSTILE)), para(text("click me", [{ type: "link", attrs: { href: "javascript:window.__pwned=true" } }])),
            // Inline nodes: a board link to a script, one whose URL holds a
            // permission id, and a node type no one knows (its label shown).
            para(text("see "), { type: "inlineBoardLink", attrs: { url: "javascript:window.__pwned=true", title: "<b>Evil board</b>" } },
              text(" and "), { type: "inlineBoardLink", attrs: { url: "https://app.milanote.com/1Ab/x?p=SECRETPERM", title: "Shared board" } },
              text(" with "), { type: "futureChip", attrs: { label: "a chip" } }, text("."))],
            HOSTILE + "\nclick me\nsee <b>Evil board</b> and Shared board with a chip."),
        }),
        node("l-js", "LINK", 40, 37, { url: "javascript:window.__pwned=true", title: "Evil link" }),
        node("swatch", "COLOR_SWATCH", 98, 4, { color: "#e63946", caption: rich([para(text("Tram red"))], "Tram red") }),
        node("sketch", "SKETCH", 98, 29, { drawing: { svg: SKETCH_SVG, paths: [{ points: [[20, 110], [200, 110]] }] } }),
        node("note", "ANNOTATION", 131, 29, { drawing: { svg: NOTE_SVG } }),
        node("doc", "DOCUMENT", 131, 4, {
          title: "Packing list",
          richText: rich([{ type: "bulletList", content: ["Passport", "Adapter", "Rain jacket", "Walking shoes", "Sunscreen", "Camera"]
            .map((t) => ({ type: "listItem", content: [para(text(t))] })) }], "Passport\nAdapter\nRain jacket"),
        }),
        node("b-denied", "BOARD", 76, 37, { title: "Someone else's board", childrenLoaded: false, unloadedReason: "ACCESS_DENIED" }),
        node("line-cards", "LINE", 33, 7, { start: "c-left", end: { elementId: "c-right" }, lineStyle: { color: "#e63946", dashed: true } }),
        node("line-points", "LINE", 11, 67, { start: { x: 7, y: 62 }, end: { x: 47, y: 68 } }),
        node("line-bad", "LINE", 11, 78, { start: "c-left", end: { elementId: "no-such-element" } }),
        node("c-proto", "CARD", 62, 56, {
          richText: rich([
            { key: "p1", type: "constructor", text: "Block typed constructor", depth: 0,
              inlineStyleRanges: [{ offset: 0, length: 5, style: "constructor" }, { offset: 6, length: 5, style: "__proto__" }],
              entityRanges: [], data: {} },
            { key: "p2", type: "__proto__", text: "Block typed __proto__", depth: 0, inlineStyleRanges: [], entityRanges: [], data: {} },
            { key: "p3", type: "hasOwnProperty", text: "Block typed hasOwnProperty", depth: 0, inlineStyleRanges: [], entityRanges: [], data: {} },
            { key: "p4", type: "toString", text: "Block typed toString", depth: 0, inlineStyleRanges: [], entityRanges: [], data: {} },
          ], "Block typed constructor\nBlock typed __proto__\nBlock typed hasOwnProperty\nBlock typed toString"),
        }),
        node("n-proto", "constructor", 98, 56, { title: "A node typed constructor" }),
        {
          id: "line-unknown", type: "UNKNOWN", elementType: "LINE", location: at(22, 44), children: [],
          content: { start: { elementId: "c-hostile" }, end: { id: "l-js" }, color: "#17803d" },
        },
      ],
    },
  };
}
