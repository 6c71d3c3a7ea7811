/* Runs inside the preview page (a sandboxed frame without an origin of its own) and does what the app
   asks of it by postMessage: read the page, click, type, press a key, scroll, annotate, list targets.
   It answers only the frame's parent. */
(function () {
  "use strict";
  var T = window.HermesTargets;
  var notes = [];

  function read() {
    var body = document.body;
    return { title: document.title || "", text: body ? (body.innerText || "").slice(0, 8000) : "" };
  }

  function need(selector) {
    var el = T.find(document, selector);
    if (!el) throw new Error("no element matches " + selector + " in the preview page");
    return el;
  }

  function annotate(args) {
    var el = need(args.selector);
    el.scrollIntoView({ block: "center" });
    var r = el.getBoundingClientRect();
    var box = document.createElement("div");
    box.setAttribute("data-hermes-overlay", "");
    box.setAttribute("data-hermes-note", args.note || "");
    box.style.cssText = "position:absolute;border:2px solid #e8590c;border-radius:4px;pointer-events:none;z-index:2147483646;" +
      "left:" + (r.left + window.scrollX - 3) + "px;top:" + (r.top + window.scrollY - 3) + "px;width:" + (r.width + 6) +
      "px;height:" + (r.height + 6) + "px";
    if (args.note) {
      var label = document.createElement("div");
      label.textContent = args.note;
      label.style.cssText = "position:absolute;left:0;top:100%;margin-top:4px;background:#e8590c;color:#fff;" +
        "font:12px sans-serif;padding:2px 6px;border-radius:3px;white-space:nowrap";
      box.appendChild(label);
    }
    document.body.appendChild(box);
    notes.push(box);
    return { annotated: args.selector, note: args.note || "", box: T.box(el), notes: notes.length };
  }

  var ops = {
    read: function () { return read(); },
    targets: function () { return { targets: T.listTargets(document) }; },
    rect: function (args) {
      var el = T.find(document, args.selector);
      return { box: el && T.visible(el) ? T.box(el) : null };
    },
    click: function (args) {
      var el = need(args.selector);
      el.click();
      return { clicked: args.selector, label: T.label(el) };
    },
    type: function (args) {
      var el = need(args.selector);
      el.focus();
      if ("value" in el) el.value = args.text || ""; else el.textContent = args.text || "";
      el.dispatchEvent(new Event("input", { bubbles: true }));
      el.dispatchEvent(new Event("change", { bubbles: true }));
      return { typed: args.selector, value: "value" in el ? el.value : el.textContent };
    },
    press: function (args) {
      var el = args.selector ? need(args.selector) : (document.activeElement || document.body);
      var key = args.text || "Enter";
      var init = { key: key, bubbles: true, cancelable: true };
      var go = el.dispatchEvent(new KeyboardEvent("keydown", init));
      el.dispatchEvent(new KeyboardEvent("keyup", init));
      if (go && key === "Enter" && el.form) el.form.requestSubmit ? el.form.requestSubmit() : el.form.submit();
      return { pressed: key, on: T.label(el) };
    },
    scroll: function (args) {
      var el = need(args.selector);
      el.scrollIntoView({ block: "center" });
      return { scrolled_to: args.selector, box: T.box(el) };
    },
    annotate: annotate,
    clear: function () {
      notes.forEach(function (n) { if (n.parentNode) n.parentNode.removeChild(n); });
      var count = notes.length;
      notes = [];
      return { cleared: count };
    }
  };

  function ready() { window.parent.postMessage({ hermes_ready: window.HERMES_PREVIEW_ID || "" }, "*"); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", ready); else ready();

  window.addEventListener("message", function (event) {
    var msg = event.data;
    if (event.source !== window.parent || !msg || typeof msg.hermes !== "string" || !ops[msg.op]) return;
    var answer;
    try { answer = ops[msg.op](msg.args || {}); } catch (e) { answer = { error: String(e.message || e) }; }
    setTimeout(function () {  // let what the action caused happen before the page is read again
      if (!answer.error && msg.op !== "read" && msg.op !== "targets" && msg.op !== "rect") answer.page = read();
      window.parent.postMessage({ hermes: msg.hermes, result: answer }, "*");
    }, msg.op === "click" || msg.op === "press" ? 150 : 0);
  });
})();
