/* Tours and tips. A tour dims the app, spotlights one target per step and explains it; steps may first
   navigate to a route or show a pane, and wait for targets that appear late; closing it (✕, Done or Esc)
   returns the app to where the tour started. A tip is one bubble with one arrow and no overlay; a new tip
   replaces the old one. Targets live in the app or, with surface 'preview', in the preview page. */
(function (root) {
  "use strict";
  var C = root.HermesComponents;
  var WAIT_MS = 4000;
  var app = null;          // hooks given by init()
  var tour = null;         // the playing tour
  var tip = null;          // the tip shown

  function sleep(ms) { return new Promise(function (r) { setTimeout(r, ms); }); }

  async function waitFor(selector, surface, waitMs) {
    var deadline = Date.now() + (waitMs === undefined ? WAIT_MS : waitMs);
    for (;;) {
      var rect = await app.resolve(selector, surface);
      if (rect) return rect;
      if (Date.now() >= deadline) return null;
      await sleep(100);
    }
  }

  function place(bubble, rect) {
    var width = 300, gap = 12;
    var left = Math.max(8, Math.min(rect.x, window.innerWidth - width - 8));
    bubble.style.left = left + "px";
    bubble.style.top = "0px";
    document.body.appendChild(bubble);
    var height = bubble.offsetHeight;
    var below = rect.y + rect.height + gap;
    if (below + height > window.innerHeight - 8 && rect.y - gap - height > 8) {
      bubble.classList.add("above");
      bubble.style.top = (rect.y - gap - height) + "px";
    } else {
      bubble.style.top = Math.min(below, window.innerHeight - height - 8) + "px";
    }
    var arrow = bubble.querySelector(".arrow");
    if (arrow) arrow.style.left = Math.max(10, Math.min(rect.x + rect.width / 2 - left - 6, width - 24)) + "px";
  }

  function removeNodes(nodes) { nodes.forEach(function (n) { if (n && n.parentNode) n.parentNode.removeChild(n); }); }

  // -- tours ------------------------------------------------------------------------------------------

  function onKey(event) {
    if (event.key === "Escape" && tour) { event.preventDefault(); event.stopPropagation(); stop("escape"); }
  }

  async function show(index) {
    var current = tour;
    if (!current) return;
    if (index >= current.steps.length) { stop("finished"); return; }
    var step = current.steps[index];
    if (step.navigate) app.navigate(step.navigate);
    if (step.pane) app.showPane(step.pane);
    var rect = await waitFor(step.selector, current.surface);
    if (tour !== current) return;
    if (!rect) {  // the target never appeared: skip this step
      if (current.skipped.indexOf(step.selector) < 0) current.skipped.push(step.selector);
      var back = index < current.index;
      return show(back && index > 0 ? index - 1 : index + 1);
    }
    current.index = index;
    current.shown.push(step.selector);
    removeNodes([current.spot, current.bubble]);
    current.spot = C.el("div", { className: "tour-spot", "data-hermes-overlay": "" });
    Object.assign(current.spot.style, { left: (rect.x - 4) + "px", top: (rect.y - 4) + "px",
                                        width: (rect.width + 8) + "px", height: (rect.height + 8) + "px" });
    document.body.appendChild(current.spot);
    var last = index === current.steps.length - 1;
    current.bubble = C.el("div", { className: "bubble", tour: "tour-step", role: "dialog",
                                   "aria-label": step.title || "Tour", "data-hermes-overlay": "",
                                   "data-step": String(index) }, [
      C.el("div", { className: "arrow" }),
      C.Button("tour-close", "✕", function () { stop("closed"); }, { className: "close", "aria-label": "Close tour" }),
      C.el("h4", { text: step.title || "" }),
      C.el("p", { text: step.text || "" }),
      C.el("div", { className: "buttons" }, [
        C.el("span", { className: "count", text: (index + 1) + " / " + current.steps.length }),
        index > 0 ? C.Button("tour-back", "Back", function () { show(index - 1); }) : null,
        C.Button("tour-next", last ? "Done" : "Next", function () { show(index + 1); }, { className: "primary" })
      ])
    ]);
    place(current.bubble, rect);
    if (current.firstShown) { current.firstShown(); current.firstShown = null; }
  }

  function start(steps, surface) {
    stop("replaced");
    clearTip();
    var started = { steps: steps.length, skipped: [], shown: [], surface: surface };
    tour = { steps: steps, surface: surface || "app", index: 0, skipped: started.skipped, shown: started.shown,
             origin: app.location(), spot: null, bubble: null, firstShown: null };
    tour.shade = C.el("div", { className: "tour-shade", tour: "tour", "data-hermes-overlay": "" });
    document.body.appendChild(tour.shade);
    document.addEventListener("keydown", onKey, true);
    var playing = tour;
    return new Promise(function (resolve) {
      playing.firstShown = function () { resolve(Object.assign(started, { playing: true, step: playing.shown[0] })); };
      playing.onEnd = function (why) {
        if (playing.firstShown) resolve(Object.assign(started, { playing: false, ended: why }));
      };
      show(0);
    });
  }

  function stop(why) {
    var ending = tour;
    if (!ending) return false;
    tour = null;
    document.removeEventListener("keydown", onKey, true);
    removeNodes([ending.shade, ending.spot, ending.bubble]);
    app.restore(ending.origin);  // back where the tour started, whichever way it was closed
    if (ending.onEnd) ending.onEnd(why);
    app.tourEnded(why, ending);
    return true;
  }

  // -- tips ---------------------------------------------------------------------------------------------

  function clearTip() {
    if (!tip) return false;
    removeNodes([tip.bubble]);
    clearTimeout(tip.timer);
    var closed = tip;
    tip = null;
    if (closed.onClose) closed.onClose();
    return true;
  }

  async function showTip(options) {
    var rect = await waitFor(options.selector, options.surface || "app", options.waitMs === undefined ? 1500 : options.waitMs);
    if (!rect) return { error: "no element matches " + options.selector + " on the " + (options.surface || "app") +
                               " page now; gui_tour(action='targets') lists what is there" };
    clearTip();  // one tip at a time: the new one replaces the old
    var bubble = C.el("div", { className: "bubble tip", tour: "tip", role: "status", "data-hermes-overlay": "",
                               "data-source": options.source || "agent" }, [
      C.el("div", { className: "arrow" }),
      C.Button("tip-close", "✕", function () { clearTip(); }, { className: "close", "aria-label": "Close tip" }),
      options.title ? C.el("h4", { text: options.title }) : null,
      C.el("p", { text: options.text })
    ]);
    place(bubble, rect);
    tip = { bubble: bubble, selector: options.selector, onClose: options.onClose, timer: 0 };
    if (options.expiresMs) tip.timer = setTimeout(clearTip, options.expiresMs);
    return { shown: true, selector: options.selector, surface: options.surface || "app", box: rect };
  }

  root.HermesTour = {
    init: function (hooks) { app = hooks; },
    start: start,
    stop: stop,
    playing: function () { return !!tour; },
    showTip: showTip,
    clearTip: clearTip,
    tipShown: function () { return tip ? tip.selector : null; }
  };
})(window);
