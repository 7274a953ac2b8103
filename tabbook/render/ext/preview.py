"""Sphinx extension: the live preview's build-error banner (``make serve`` only).

``tabbook.serve`` sets ``tabbook_preview_status`` to the URL of the status file that each of its
rebuilds writes (``{"ok": ..., "error": "..."}``). Pages rendered with it set fetch that file
once loaded (sphinx-autobuild reloads them after every build, failed or not) and, when the last
build failed, show its error over the stale page. Without the setting (``make html``, the published
site) nothing is added to any page.
"""

from __future__ import annotations

import json

from sphinx.application import Sphinx
from sphinx.util.typing import ExtensionMetadata

from tabbook.render.formats import format_of

BANNER_ID = "tabbook-preview-error"
SCRIPT = """addEventListener("DOMContentLoaded", async () => {
  let status;
  try {
    status = await (await fetch(__URL__, {cache: "no-store"})).json();
  } catch (err) {
    return; /* not served by make serve */
  }
  if (!status.error) return;
  const bar = document.createElement("pre");
  bar.id = "__ID__";
  bar.setAttribute("role", "alert");
  bar.style.cssText = "position:fixed;left:0;right:0;bottom:0;z-index:999;margin:0;padding:.6em 1em;" +
    "font:13px/1.4 monospace;white-space:pre-wrap;max-height:45vh;overflow:auto;background:#b00020;color:#fff";
  bar.textContent = "tabbook: the last build failed; this page is stale.\\n\\n" + status.error;
  document.body.append(bar);
});"""


def _add_script(app: Sphinx) -> None:
    url = app.config.tabbook_preview_status
    if url and format_of(app.builder).web_page:
        body = SCRIPT.replace("__URL__", json.dumps(url)).replace("__ID__", BANNER_ID)
        app.add_js_file(None, body=body, priority=900)


def setup(app: Sphinx) -> ExtensionMetadata:
    # "html": switching between `make serve` and `make html` rewrites the pages (no re-read).
    app.add_config_value("tabbook_preview_status", "", "html", types=(str,))
    app.connect("builder-inited", _add_script)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
