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
    return painted().then(function () { return new Promise(function (resolve) {
      pending[id] = resolve;
      els.frame.contentWindow.postMessage({ hermes: id, op: op, args: args || {} }, "*");
      setTimeout(function () {
        if (pending[id]) { delete pending[id]; resolve({ error: "the preview page did not answer (is it busy?)" }); }
      }, timeoutMs || 5000);
    }); });
  }

  /* after the next paint: a frame just shown again gets its size in the parent's next rendering update */
  function painted() {
    return new Promise(function (resolve) {
      requestAnimationFrame(function () { requestAnimationFrame(function () { resolve(); }); });
      setTimeout(resolve, 200);  // a page in the background paints nothing: do not wait for it
    });
  }

  var readyWaiters = {};

  window.addEventListener("message", function (event) {
    var msg = event.data;
    if (!els.frame || event.source !== els.frame.contentWindow || !msg) return;
    if (typeof msg.hermes_ready === "string" && readyWaiters[msg.hermes_ready]) {
      readyWaiters[msg.hermes_ready]();
      delete readyWaiters[msg.hermes_ready];
      return;
    }
    if (!pending[msg.hermes]) return;
    var resolve = pending[msg.hermes];
    delete pending[msg.hermes];
    resolve(msg.result);
  });

  /* the document shown as `id` has parsed and its agent listens (a live page: its load event) */
  function loaded(id) {
    return new Promise(function (resolve) {
      var done = false;
      var finish = function () { if (!done) { done = true; delete readyWaiters[id]; resolve(); } };
      if (id) readyWaiters[id] = finish;
      else els.frame.addEventListener("load", finish, { once: true });
      setTimeout(finish, 5000);
    });
  }

  /* each document gets a new frame element: a frame hidden and shown again can keep stale geometry */
  function fresh() {
    var old = els.frame, frame = old.cloneNode(false);
    frame.removeAttribute("src");
    frame.removeAttribute("srcdoc");
    old.parentNode.replaceChild(frame, old);
    els.frame = frame;
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
      fresh();
      var id = args.kind === "url" ? "" : "show" + (++counter);
      var waiting = loaded(id);
      shown = { kind: args.kind, title: args.title || "", url: args.url || null };
      els.caption.textContent = args.title || (args.kind === "url" ? args.url : "Preview");
      if (args.kind === "url") {
        els.frame.removeAttribute("srcdoc");
        els.frame.src = args.url;
      } else {
        els.frame.removeAttribute("src");
        els.frame.srcdoc = "<script>window.HERMES_PREVIEW_ID = " + JSON.stringify(id) + ";\n" + agentSource +
                           "<\/script>" + args.html;
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
