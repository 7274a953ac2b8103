// tabbook: render TeX to HTML + MathML at build time with KaTeX.
//
// Protocol: one JSON request per line on stdin, one JSON reply per line on stdout, in order.
//   request: {"tex": "...", "display": true|false, "macros": {...}, "lenient": true|false}
//   (lenient: what KaTeX cannot read is shown as its TeX, in the error colour, the rest typeset)
//   reply:   {"html": "..."}  or  {"error": "KaTeX parse error: ..."}
// The first line written is {"version": "<katex version>"} so the caller knows it started.
"use strict";

const readline = require("readline");
const katex = require(process.argv[2] || "katex");

process.stdout.write(JSON.stringify({ version: katex.version }) + "\n");

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("line", (line) => {
  if (!line.trim()) return;
  let reply;
  try {
    const req = JSON.parse(line);
    const html = katex.renderToString(req.tex, {
      displayMode: Boolean(req.display),
      output: "htmlAndMathml",
      throwOnError: !req.lenient,
      strict: "ignore",
      trust: false,
      macros: req.macros || {},
    });
    reply = { html };
  } catch (err) {
    reply = { error: String(err && err.message ? err.message : err) };
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
});
