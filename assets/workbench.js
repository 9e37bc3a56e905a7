// The playground's workbench: the request in the form as code to copy and
// run, in the POST form (the share link in the body, out of URLs): a curl
// line, a JavaScript fetch and a Python requests call. Inlined into
// playground.html by the server with canvas.js. Pure text in, text out: the
// page shows it with textContent, and nothing typed is kept anywhere.
"use strict";
const Workbench = (function () {
  // A shell word that stays one word, whatever the text holds.
  function shellQuote(s) {
    return "'" + s.replace(/'/g, "'\\''") + "'";
  }

  // The code for POST `url` with `params` (strings, and arrays of strings:
  // as JSON they are JavaScript and Python literals too).
  function snippets(url, params) {
    const indented = (n) => JSON.stringify(params, null, n).replace(/\n/g, "\n" + " ".repeat(n));
    return {
      curl: "curl -s " + shellQuote(url) + " \\\n  -H 'Content-Type: application/json' \\\n  -d " +
        shellQuote(JSON.stringify(params)),
      fetch: "const res = await fetch(" + JSON.stringify(url) + ", {\n" +
        "  method: \"POST\",\n" +
        "  headers: { \"Content-Type\": \"application/json\" },\n" +
        "  body: JSON.stringify(" + indented(2) + "),\n" +
        "});\n" +
        "const answer = await res.json(); // {ok: true, data} or {ok: false, error}",
      python: "import requests\n\n" +
        "res = requests.post(\n" +
        "    " + JSON.stringify(url) + ",\n" +
        "    json=" + indented(4) + ",\n" +
        "    timeout=30,\n" +
        ")\n" +
        "answer = res.json()  # {\"ok\": True, \"data\": ...} or {\"ok\": False, \"error\": ...}",
    };
  }

  return { shellQuote, snippets };
})();
