// tabbook: framework tabs that are accessible and remembered, copy buttons on code cells, boxes
// that scroll reachable by keyboard, and search snippets that read as text.
//
// Progressive enhancement. Without JavaScript, sphinx-design's radio-button tabs work with CSS
// alone and every panel is one click away. With it, each tab set becomes a WAI-ARIA tablist
// (role tablist/tab/tabpanel, roving tabindex, arrow/Home/End keys); choosing a framework,
// by mouse or keyboard, selects it in every tab set on the page and is remembered across pages
// and reloads (localStorage, sphinx-design's key) and can be forced with ?tab=<name>. A tab set
// lacking the chosen framework shows the reader's most recent other choice it has, else the
// tab the build selected (the book's default framework, else the first tab).
//
// The same choice drives links offered per framework (the PDF, the slides: one <a> whose
// data-href/data-fws give every framework's URL, pointing at the chosen one). The front page's
// picker (tabbook.render.front) stores a choice under the same key and signals it as another
// window would, with a "storage" event.
//
// Sphinx's search-term highlighter (sphinx_highlight.js) is needed only by a reader who arrives
// from a search (?highlight=, which the search page writes into its result links): it is not
// linked from content pages (tabbook.render.ext.html) and is loaded from here, beside this script,
// when there are terms.
(() => {
  "use strict";

  const HERE = document.currentScript ? document.currentScript.src : "";

  const STORE_PREFIX = "sphinx-design-tab-id-"; // sphinx-design's key: both scripts agree
  const HISTORY_KEY = "tabbook-tab-history";
  const HISTORY_MAX = 8;

  const storage = {
    get(key) {
      try {
        return window.localStorage.getItem(key);
      } catch (err) {
        return null; // storage blocked: choices are simply not remembered
      }
    },
    set(key, value) {
      try {
        window.localStorage.setItem(key, value);
      } catch (err) {
        /* storage blocked */
      }
    },
  };

  /** The reader's choices in a sync group, most recent first. */
  function history(group) {
    let list = [];
    try {
      const all = JSON.parse(storage.get(HISTORY_KEY) || "{}");
      if (Array.isArray(all[group])) list = all[group].filter((x) => typeof x === "string");
    } catch (err) {
      list = [];
    }
    const stored = storage.get(STORE_PREFIX + group);
    if (stored && list[0] !== stored) list.unshift(stored);
    return list;
  }

  function remember(group, id) {
    const list = [id, ...history(group).filter((x) => x !== id)].slice(0, HISTORY_MAX);
    let all = {};
    try {
      all = JSON.parse(storage.get(HISTORY_KEY) || "{}") || {};
    } catch (err) {
      all = {};
    }
    all[group] = list;
    storage.set(HISTORY_KEY, JSON.stringify(all));
    storage.set(STORE_PREFIX + group, id);
  }

  /** @type {{set: HTMLElement, group: string|null, items: any[]}[]} */
  const sets = [];

  function enhance(set, index) {
    const labels = Array.from(set.children).filter(
      (el) => el.tagName === "LABEL" && el.classList.contains("sd-tab-label"),
    );
    const items = [];
    for (const label of labels) {
      const input = document.getElementById(label.htmlFor);
      const panel = label.nextElementSibling;
      if (!(input instanceof HTMLInputElement) || !panel || !panel.classList.contains("sd-tab-content")) {
        return; // not the structure sphinx-design builds: leave this set alone
      }
      items.push({ label, input, panel, tab: null, id: label.dataset.syncId || null });
    }
    if (!items.length) return;
    const group = labels[0].dataset.syncGroup || null;
    const entry = { set, group, items };
    const list = document.createElement("div");
    list.className = "tabbook-tablist";
    list.setAttribute("role", "tablist");
    list.setAttribute("aria-label", group === "tab" ? "Framework" : "Tabs");
    items.forEach((item, i) => {
      const { label, input, panel } = item;
      // A <label> may not take role="tab": a button does, with the label's text, data and id.
      const tab = document.createElement("button");
      tab.type = "button";
      tab.className = label.className;
      tab.classList.add("tabbook-tab");
      Object.assign(tab.dataset, label.dataset);
      if (!panel.id) panel.id = `tabbook-panel-${index}-${i}`;
      tab.id = label.id || `${input.id || panel.id}-tab`;
      tab.append(...label.childNodes);
      tab.setAttribute("role", "tab");
      tab.setAttribute("aria-controls", panel.id);
      panel.setAttribute("role", "tabpanel");
      panel.setAttribute("aria-labelledby", tab.id);
      input.hidden = true; // the radio keeps the state the CSS shows; the tab is the control
      input.tabIndex = -1;
      label.remove();
      list.appendChild(tab);
      item.tab = tab;
      tab.addEventListener("click", () => choose(entry, item, true));
    });
    list.addEventListener("keydown", (event) => onKey(entry, event));
    set.insertBefore(list, set.firstChild);
    set.classList.add("tabbook-enhanced");
    sets.push(entry);
    refresh(entry);
  }

  /** Mirror the radios' state into ARIA and the roving tabindex. */
  function refresh(entry) {
    for (const item of entry.items) {
      const on = item.input.checked;
      item.tab.setAttribute("aria-selected", on ? "true" : "false");
      item.tab.tabIndex = on ? 0 : -1;
      item.panel.tabIndex = 0;
    }
  }

  function show(entry, item) {
    if (!item.input.checked) item.input.checked = true;
    refresh(entry);
  }

  /** The tab a set should show for the reader's choices (most recent first). */
  function pick(entry, choices) {
    for (const id of choices) {
      const hit = entry.items.find((it) => it.id === id);
      if (hit) return hit;
    }
    // The build selects the book's default framework (or the first tab): keep that otherwise.
    return entry.items.find((it) => it.input.defaultChecked) || entry.items[0];
  }

  function applyGroup(group, choices) {
    for (const entry of sets) {
      if (entry.group === group) show(entry, pick(entry, choices));
    }
    followLinks(group, choices);
  }

  // ---- links that follow the choice ---------------------------------------

  /** Point every per-framework link of the group (data-href: its URL with {fw}; data-fws:
   * "name:Label|…") at the most recent choice it offers; else it keeps the build's default. */
  function followLinks(group, choices) {
    for (const a of document.querySelectorAll(`a[data-fws][data-sync-group="${group}"]`)) {
      const fws = new Map(a.dataset.fws.split("|").map((s) => s.split(":")));
      const fw = choices.find((id) => fws.has(id));
      if (fw) [a.href, a.textContent] = [a.dataset.href.replace("{fw}", fw), fws.get(fw)];
    }
  }

  /** A tab chosen by the reader: show it, sync the group, remember it; keep the tab in place. */
  function choose(entry, item, focus) {
    const top = item.tab.getBoundingClientRect().top;
    if (entry.group && item.id) {
      remember(entry.group, item.id);
      applyGroup(entry.group, history(entry.group));
    } else {
      show(entry, item);
    }
    if (focus) item.tab.focus({ preventScroll: true });
    const shift = item.tab.getBoundingClientRect().top - top;
    if (shift) window.scrollBy(0, shift); // other sets above changed height: don't jump
  }

  function onKey(entry, event) {
    const items = entry.items;
    const at = items.findIndex((it) => it.tab === document.activeElement);
    if (at < 0) return;
    let next = null;
    switch (event.key) {
      case "ArrowRight":
      case "ArrowDown":
        next = items[(at + 1) % items.length];
        break;
      case "ArrowLeft":
      case "ArrowUp":
        next = items[(at - 1 + items.length) % items.length];
        break;
      case "Home":
        next = items[0];
        break;
      case "End":
        next = items[items.length - 1];
        break;
      case "Enter":
      case " ":
        next = items[at];
        break;
      default:
        return;
    }
    event.preventDefault();
    event.stopPropagation();
    choose(entry, next, true);
  }

  /** Open the tab panel holding the URL's #target (this set only; the choice is not changed). */
  function showHashTarget() {
    const id = decodeURIComponent(window.location.hash.slice(1));
    const target = id && document.getElementById(id);
    if (!target) return;
    let opened = false;
    for (const entry of sets) {
      for (const item of entry.items) {
        if (item.tab === target || item.panel.contains(target)) {
          show(entry, item);
          opened = true;
        }
      }
    }
    if (opened) target.scrollIntoView();
  }

  function initTabs() {
    document.querySelectorAll(".sd-tab-set").forEach((set, i) => enhance(set, i));
    const groups = new Set(sets.map((s) => s.group).filter(Boolean));
    // Links that follow the choice and the front page's picker belong to a group without a tab set.
    document.querySelectorAll("[data-sync-group]").forEach((el) => groups.add(el.dataset.syncGroup));
    const query = new URLSearchParams(window.location.search);
    for (const group of groups) {
      const forced = query.get(group);
      if (forced) remember(group, forced);
      applyGroup(group, history(group));
    }
    showHashTarget();
    window.addEventListener("hashchange", showHashTarget);
    // Another tab or window changed the choice: follow it.
    window.addEventListener("storage", (event) => {
      if (event.key && event.key.startsWith(STORE_PREFIX)) {
        const group = event.key.slice(STORE_PREFIX.length);
        if (groups.has(group)) applyGroup(group, history(group));
      }
    });
  }

  // ---- copy buttons ---------------------------------------------------------------------------

  const COPY_ICON =
    '<svg viewBox="0 0 16 16" width="16" height="16" aria-hidden="true" focusable="false">' +
    '<path fill="currentColor" d="M4 2a2 2 0 0 1 2-2h6a2 2 0 0 1 2 2v8a2 2 0 0 1-2 2H6a2 2 0 0 1-2-2V2zm2-.75a.75.75 0 0 0-.75.75v8c0 .41.34.75.75.75h6a.75.75 0 0 0 .75-.75V2a.75.75 0 0 0-.75-.75H6zM2 5.5a.75.75 0 0 1 .75.75V13c0 .41.34.75.75.75h5.75a.75.75 0 0 1 0 1.5H3.5A2.25 2.25 0 0 1 1.25 13V6.25A.75.75 0 0 1 2 5.5z"/></svg>';

  /** The code of a block: its text less prompts, console outputs and line numbers, no final newline. */
  function codeOf(pre) {
    const copy = pre.cloneNode(true);
    copy.querySelectorAll(".gp, .go, .linenos, .tabbook-copy").forEach((el) => el.remove());
    return copy.textContent.replace(/\n$/, "");
  }

  async function writeClipboard(text) {
    if (navigator.clipboard && window.isSecureContext) {
      try {
        await navigator.clipboard.writeText(text);
        return true;
      } catch (err) {
        /* fall back below */
      }
    }
    const area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    let ok = false;
    try {
      ok = document.execCommand("copy");
    } catch (err) {
      ok = false;
    }
    area.remove();
    return ok;
  }

  function addCopyButton(block) {
    const pre = block.querySelector("pre");
    if (!pre || block.querySelector(":scope > .tabbook-copy")) return;
    const button = document.createElement("button");
    button.type = "button";
    button.className = "tabbook-copy";
    button.setAttribute("aria-label", "Copy code");
    button.title = "Copy code";
    button.innerHTML = COPY_ICON + '<span class="tabbook-copy-text" aria-live="polite"></span>';
    const status = button.querySelector(".tabbook-copy-text");
    let timer = 0;
    button.addEventListener("click", async () => {
      const ok = await writeClipboard(codeOf(pre));
      status.textContent = ok ? "Copied" : "Press Ctrl+C";
      button.classList.toggle("tabbook-copied", ok);
      if (!ok) {
        const range = document.createRange();
        range.selectNodeContents(pre);
        const sel = window.getSelection();
        sel.removeAllRanges();
        sel.addRange(range);
      }
      window.clearTimeout(timer);
      timer = window.setTimeout(() => {
        status.textContent = "";
        button.classList.remove("tabbook-copied");
      }, 2000);
    });
    block.appendChild(button);
  }

  function initCopy() {
    // Code cells' inputs and code blocks in prose; never a cell's outputs.
    document.querySelectorAll("div[class*='highlight-'] > div.highlight").forEach((block) => {
      if (block.closest(".cell_output, .output")) return;
      addCopyButton(block);
    });
  }

  // ---- search terms highlighted on the page a search result opened, and there only ----------------
  // Sphinx's search page keeps the terms in localStorage for the next page that loads its
  // highlighter: whichever page that is (one reached from the sidebar after a search, one opened
  // much later, in any window), and in a window that shows them, every page after a search when a
  // result opens in a new tab. Here the terms travel with the result's link instead (?highlight=,
  // which Sphinx's highlighter reads and then takes off the address): the search page writes them
  // into every result link and forgets the stored ones, and any other page forgets them unread.
  const TERMS_KEY = "sphinx_highlight_terms";

  function forgetTerms() {
    try {
      window.localStorage.removeItem(TERMS_KEY);
    } catch (err) {
      /* storage blocked: nothing was stored either */
    }
  }

  function linkResults() {
    const results = document.getElementById("search-results");
    if (!results || typeof URL === "undefined") return;
    const mark = () => {
      const terms = storage.get(TERMS_KEY) || new URL(window.location.href).searchParams.get("q") || "";
      forgetTerms();
      if (terms) results.dataset.tabbookTerms = terms.toLowerCase();
      const words = results.dataset.tabbookTerms;
      if (!words) return;
      results.querySelectorAll("a[href]").forEach((a) => {
        const url = new URL(a.href, window.location.href);
        if (url.origin !== window.location.origin || url.searchParams.get("highlight") === words) return;
        url.searchParams.set("highlight", words);
        a.href = url.href;
      });
    };
    new MutationObserver(mark).observe(results, {childList: true, subtree: true});
    window.addEventListener("pagehide", forgetTerms);
    mark();
  }

  function loadHighlighter() {
    if (document.getElementById("search-results")) { // the search page: the terms go into its links
      linkResults();
      return;
    }
    forgetTerms(); // stored by a search this page was not opened from
    if (typeof SphinxHighlight !== "undefined" || !HERE) return; // linked by the page itself
    let terms = null;
    try {
      terms = new URL(window.location.href).searchParams.get("highlight");
    } catch (err) {
      // no URL support: nothing to highlight from the address
    }
    if (!terms) return;
    const script = document.createElement("script");
    script.src = HERE.replace(/tabbook\.js(\?.*)?$/, "sphinx_highlight.js");
    document.head.appendChild(script);
  }

  // ---- boxes that scroll sideways, reachable by keyboard ------------------------------------------
  // A code block, an output or an equation wider than the column scrolls; a keyboard reader can
  // scroll it only if it can take focus (WCAG 2.1.1; axe's scrollable-region-focusable). Only the
  // boxes that overflow on this screen get a tab stop, so a page of short cells gains none; each
  // is looked at again when its size changes (a tab shown, the window resized).
  const SCROLLERS = "article pre, article div.math, article .math-wrapper, article .katex-display, " +
    "article .cell_output, article .table-wrapper";

  function scrolls(el) {
    const style = window.getComputedStyle(el);
    const x = /auto|scroll/.test(style.overflowX) && el.scrollWidth > el.clientWidth + 1;
    const y = /auto|scroll/.test(style.overflowY) && el.scrollHeight > el.clientHeight + 1;
    return x || y;
  }

  function markScrollable(el) {
    const ours = el.hasAttribute("data-tabbook-scroll");
    if (scrolls(el)) {
      if (!el.hasAttribute("tabindex")) {
        el.tabIndex = 0;
        el.setAttribute("data-tabbook-scroll", "");
      }
    } else if (ours) {
      el.removeAttribute("tabindex");
      el.removeAttribute("data-tabbook-scroll");
    }
  }

  function initScrollables() {
    const boxes = document.querySelectorAll(SCROLLERS);
    if ("ResizeObserver" in window) {
      const watch = new ResizeObserver((entries) => entries.forEach((e) => markScrollable(e.target)));
      boxes.forEach((box) => watch.observe(box));
    } else {
      const all = () => boxes.forEach(markScrollable);
      all();
      window.addEventListener("resize", all);
    }
  }

  // ---- search results' snippets --------------------------------------------------------------------
  // Sphinx's search page shows a snippet of each result: the text of the page's main part, where
  // adjacent elements' words ran together ("NotebooksPyTorchJAXTensorFlowMXNet PDFnot in this
  // build") and a formula came twice (KaTeX's MathML beside its HTML). The page is cleaned before
  // Sphinx takes its text: no downloads line, tab labels, copy buttons or provenance, one
  // rendering of each formula, and a space after every block. A snippet is prose: code cells,
  // their outputs (tracebacks) and code blocks are left out, so a term found only in code shows
  // the page's opening prose rather than a line of code or a traceback.
  const NOT_PROSE = ".tabbook-downloads, .tabbook-provenance, .sd-tab-label, .tabbook-copy, .katex-mathml, " +
    ".tabbook-picker, .headerlink, div.cell, .cell_output, div[class*='highlight-'], pre";
  const BLOCKS = "p, li, dt, dd, h1, h2, h3, h4, h5, h6, td, th, pre, figcaption, caption, div, section, label";

  function cleanSearchSnippets() {
    if (typeof Search === "undefined" || typeof Search.htmlToText !== "function" || Search.tabbookClean) return;
    const htmlToText = Search.htmlToText;
    Search.htmlToText = (htmlString, anchor) => {
      const doc = new DOMParser().parseFromString(htmlString, "text/html");
      doc.querySelectorAll(NOT_PROSE).forEach((el) => el.remove());
      doc.querySelectorAll(BLOCKS).forEach((el) => el.append(" "));
      return htmlToText(doc.documentElement.outerHTML, anchor).replace(/\s+/g, " ");
    };
    Search.tabbookClean = true;
  }

  function init() {
    initTabs();
    initCopy();
    initScrollables();
    cleanSearchSnippets();
    loadHighlighter();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
