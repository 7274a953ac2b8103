// tabbook's slide decks: start reveal.js with the deck's settings. Keyboard (arrows, space,
// Home/End), the URL's #/N (so a reload keeps the slide), a slide counter; no transitions, no
// plugins, nothing loaded from elsewhere.
(() => {
  "use strict";
  if (typeof Reveal === "undefined") return; // reveal.js did not load: the slides read as a page
  Reveal.initialize({
    hash: true,
    controls: true,
    progress: true,
    slideNumber: "c/t",
    transition: "none",
    backgroundTransition: "none",
    width: 1100,
    height: 700,
    margin: 0.05,
  });
})();
