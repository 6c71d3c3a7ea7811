/* The preview pane: HTML, images, text files (shown with the preview agent inside, which drive_preview,
   annotate_preview and preview tours talk to) or a live page (another site: shown only). The frame is
   sandboxed without allow-same-origin, so what it shows can reach neither the app nor its API. */
(function (root) {
  "use strict";
  var els = {}, agentSource = "", shown = null, pending = {}, counter = 0;

  function call(op, args, timeoutMs) {
    if (!shown) return Promise.resolve({ error: "the preview pane shows nothing; desktop_preview(action='show') first" });
    if (shown.kind === "url") return Promise.resolve({ error: "the preview shows a live page of another site (" + shown.url +
      "); it can be shown and closed, not read or driven" });
    var id = "p" + (++counter);
    return new Promise(function (resolve) {
      pending[id] = resolve;
      els.frame.contentWindow.postMessage({ hermes: id, op: op, args: args || {} }, "*");
      setTimeout(function () {
        if (pending[id]) { delete pending[id]; resolve({ error: "the preview page did not answer (is it busy?)" }); }
      }, timeoutMs || 5000);
    });
  }

  window.addEventListener("message", function (event) {
    var msg = event.data;
    if (!els.frame || event.source !== els.frame.contentWindow || !msg || !pending[msg.hermes]) return;
    var resolve = pending[msg.hermes];
    delete pending[msg.hermes];
    resolve(msg.result);
  });

  function loaded() {
    return new Promise(function (resolve) {
      var done = false;
      els.frame.addEventListener("load", function () { if (!done) { done = true; resolve(); } }, { once: true });
      setTimeout(function () { if (!done) { done = true; resolve(); } }, 5000);
    });
  }

  var P = {
    init: async function (elements) {
      els = elements;
      var parts = await Promise.all(["/app/targets.js", "/app/preview-agent.js"].map(function (u) {
        return fetch(u).then(function (r) { return r.text(); });
      }));
      agentSource = parts.join("\n");
    },
    show: async function (args) {
      var waiting = loaded();
      shown = { kind: args.kind, title: args.title || "", url: args.url || null };
      els.caption.textContent = args.title || (args.kind === "url" ? args.url : "Preview");
      if (args.kind === "url") {
        els.frame.removeAttribute("srcdoc");
        els.frame.src = args.url;
      } else {
        els.frame.removeAttribute("src");
        els.frame.srcdoc = "<script>" + agentSource + "<\/script>" + args.html;
      }
      await waiting;
      if (args.kind === "url") return { shown: "url", url: args.url, caption: els.caption.textContent };
      var page = await call("read");
      return { shown: args.kind, caption: els.caption.textContent, title: page.title, text: (page.text || "").slice(0, 2000) };
    },
    close: function () {
      var was = shown;
      shown = null;
      els.frame.removeAttribute("srcdoc");
      els.frame.src = "about:blank";
      els.caption.textContent = "Nothing to preview yet.";
      return { closed: !!was };
    },
    call: call,
    state: function () { return shown; },
    /* where a selector of the preview page is, in the app's viewport (for tours and tips on the preview) */
    rect: async function (selector) {
      if (!shown || shown.kind === "url") return null;
      var answer = await call("rect", { selector: selector }, 1000);
      if (!answer || !answer.box) return null;
      var frame = els.frame.getBoundingClientRect();
      if (frame.width === 0) return null;
      return { x: frame.left + answer.box.x, y: frame.top + answer.box.y, width: answer.box.width, height: answer.box.height };
    }
  };
  root.HermesPreview = P;
})(window);
