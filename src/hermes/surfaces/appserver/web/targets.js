/* What a tour or a tip can point at, in any document (the app, or the preview page through its agent).
   A stable selector names an element by identity -- data-tour, id, data-testid, aria-label -- and only
   when it picks out that one element; everything else gets a positional nth-child path, which a
   re-render can break, so it is marked stable: false and listed after the stable ones. */
(function (root) {
  "use strict";
  var IDENTITY = ["data-tour", "id", "data-testid", "aria-label"];
  var CANDIDATES = "[data-tour],[id],[data-testid],[aria-label],button,a[href],input,textarea,select," +
    "[role=button],summary,h1,h2,h3";

  function quote(value) { return '"' + String(value).replace(/["\\]/g, "\\$&") + '"'; }

  function identitySelector(name, value) {
    if (name === "id") {
      return /^[A-Za-z][\w-]*$/.test(value) ? "#" + value : "[id=" + quote(value) + "]";
    }
    return "[" + name + "=" + quote(value) + "]";
  }

  function visible(el) {
    if (!el || !el.getBoundingClientRect) return false;
    var box = el.getBoundingClientRect();
    if (box.width <= 0 || box.height <= 0) return false;
    var style = (el.ownerDocument.defaultView || window).getComputedStyle(el);
    return style.visibility !== "hidden" && style.display !== "none";
  }

  function stableSelector(el) {
    var doc = el.ownerDocument;
    for (var i = 0; i < IDENTITY.length; i++) {
      var value = el.getAttribute(IDENTITY[i]);
      if (!value) continue;
      var selector = identitySelector(IDENTITY[i], value);
      try {
        if (doc.querySelectorAll(selector).length === 1) return selector;
      } catch (e) { /* not a valid selector: try the next attribute */ }
    }
    return null;
  }

  function pathSelector(el) {
    var parts = [];
    var body = el.ownerDocument.body;
    while (el && el.nodeType === 1 && el !== body) {
      var index = 1;
      for (var sib = el.previousElementSibling; sib; sib = sib.previousElementSibling) index++;
      parts.unshift(el.tagName.toLowerCase() + ":nth-child(" + index + ")");
      el = el.parentElement;
    }
    return "body > " + parts.join(" > ");
  }

  function label(el) {
    var text = el.getAttribute("aria-label") || el.getAttribute("title") || el.getAttribute("placeholder") ||
      (el.innerText || el.textContent || "").trim() || el.getAttribute("data-tour") || el.id || el.tagName.toLowerCase();
    text = text.replace(/\s+/g, " ").trim();
    return text.length > 80 ? text.slice(0, 79) + "…" : text;
  }

  function inOverlay(el) { return !!(el.closest && el.closest("[data-hermes-overlay]")); }

  function listTargets(doc, limit) {
    limit = limit || 200;
    var stable = [], positional = [], seen = {};
    var nodes = doc.querySelectorAll(CANDIDATES);
    for (var i = 0; i < nodes.length; i++) {
      var el = nodes[i];
      if (inOverlay(el) || !visible(el)) continue;
      var sel = stableSelector(el);
      var entry = { selector: sel || pathSelector(el), label: label(el), stable: !!sel,
                    tag: el.tagName.toLowerCase() };
      if (seen[entry.selector]) continue;
      seen[entry.selector] = true;
      (sel ? stable : positional).push(entry);
    }
    return stable.concat(positional).slice(0, limit);
  }

  function find(doc, selector) {
    try { return doc.querySelector(selector); } catch (e) { return null; }
  }

  function box(el) {
    var r = el.getBoundingClientRect();
    return { x: Math.round(r.left), y: Math.round(r.top), width: Math.round(r.width), height: Math.round(r.height) };
  }

  root.HermesTargets = { listTargets: listTargets, stableSelector: stableSelector, label: label, visible: visible,
                         find: find, box: box };
})(window);
