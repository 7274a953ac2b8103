// tabbook's slide decks: start reveal.js with the deck's settings. Keyboard (arrows, space,
// Home/End), the URL's #/N (so a reload keeps the slide), a slide counter; no transitions, no
// plugins, nothing loaded from elsewhere.
//
// A slide holds what the author marked plus whole code cells and their outputs, so one can be
// taller than the 1100×700 frame. A presenter wants it all in view without scrolling: each slide
// is shrunk to fit (its font size, in which everything on it is measured), down to FLOOR of the
// deck's size; what still does not fit at FLOOR scrolls inside the slide (a tab stop, so the
// keyboard reaches it too). The fit is in the deck's own units, the same at every window size
// (reveal.js scales the whole frame), and is made when a slide is shown, since hidden slides have
// no layout to measure.
(() => {
  "use strict";
  if (typeof Reveal === "undefined") return; // reveal.js did not load: the slides read as a page
  const FLOOR = 0.5;
  const fits = (s) => s.scrollHeight <= s.clientHeight + 1 && s.scrollWidth <= s.clientWidth + 1;
  const fit = (slide) => {
    if (!slide) return;
    slide.style.fontSize = "";
    slide.classList.remove("tabbook-deck-scrolls");
    slide.removeAttribute("tabindex");
    if (fits(slide)) return;
    let lo = FLOOR, hi = 1;
    for (let i = 0; i < 8; i++) { // to within 0.2% of the frame: a few layouts, once per slide shown
      const mid = (lo + hi) / 2;
      slide.style.fontSize = `${mid}em`;
      if (fits(slide)) lo = mid; else hi = mid;
    }
    slide.style.fontSize = `${lo}em`;
    if (!fits(slide)) {
      slide.classList.add("tabbook-deck-scrolls");
      slide.tabIndex = 0;
    }
  };
  const current = () => fit(Reveal.getCurrentSlide());
  Reveal.on("ready", current);
  Reveal.on("slidechanged", current);
  if (document.fonts) document.fonts.ready.then(current); // math fonts change what fits
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
