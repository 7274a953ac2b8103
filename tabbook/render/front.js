// The front page's framework picker: one choice for the whole site, the one the tabs make. It is
// stored under the tabs' own key (sphinx-design's, which tabbook.js reads), and tabbook.js is told
// as it is told of a choice made in another window: a "storage" event, so this page's tabs and
// links follow too. Without JavaScript nothing can be chosen, so the picker stays hidden.
//
// The install lines name the site's own package index (tabbook/render/package.py): the page knows
// the site's address, the build does not, so the placeholder becomes it here (a copy copies it).
document.addEventListener("DOMContentLoaded", () => {
  for (const pre of document.querySelectorAll(".tabbook-pip pre[data-index]")) {
    const here = new URL(pre.dataset.index, document.baseURI);
    here.search = here.hash = "";
    pre.textContent = pre.textContent.replace(pre.dataset.placeholder + pre.dataset.index, here.href);
  }
});
(() => {
  "use strict";
  const picker = document.currentScript.previousElementSibling;
  if (!picker || !picker.classList.contains("tabbook-picker")) return;
  const key = "sphinx-design-tab-id-" + picker.dataset.syncGroup;
  const buttons = Array.from(picker.querySelectorAll("button[data-sync-id]"));
  const stored = () => {
    try {
      return window.localStorage.getItem(key);
    } catch (err) {
      return null; // storage blocked: the choice holds for this page only
    }
  };
  const mark = (id) => {
    const on = buttons.some((b) => b.dataset.syncId === id) ? id : picker.dataset.default;
    for (const b of buttons) b.setAttribute("aria-pressed", b.dataset.syncId === on ? "true" : "false");
  };
  for (const b of buttons) {
    b.addEventListener("click", () => {
      try {
        window.localStorage.setItem(key, b.dataset.syncId);
      } catch (err) {
        /* storage blocked */
      }
      mark(b.dataset.syncId);
      window.dispatchEvent(new StorageEvent("storage", { key }));
    });
  }
  // After tabbook.js has read ?tab=… (it runs first on DOMContentLoaded).
  document.addEventListener("DOMContentLoaded", () => mark(stored()));
  mark(stored());
  picker.hidden = false;
})();
