/* The shared base components. Each carries its data-tour name itself, so every screen that uses one is
   named the same way and tours and tips keep a small vocabulary that survives re-renders. Components
   that repeat in a list (messages, tool calls, session items, tabs) carry data-tour-item instead: a name
   shared by many elements identifies none of them, so they are pointed at by position (not stable). */
(function (root) {
  "use strict";

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    attrs = attrs || {};
    Object.keys(attrs).forEach(function (name) {
      var value = attrs[name];
      if (value === undefined || value === null || value === false) return;
      if (name === "text") node.textContent = value;
      else if (name === "tour") node.setAttribute("data-tour", value);
      else if (name === "item") node.setAttribute("data-tour-item", value);
      else if (name === "onclick") node.addEventListener("click", value);
      else if (name === "className") node.className = value;
      else node.setAttribute(name, value === true ? "" : value);
    });
    (children || []).forEach(function (child) {
      if (child) node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    });
    return node;
  }

  var C = {
    el: el,
    Button: function (tour, text, onclick, extra) {
      return el("button", Object.assign({ type: "button", tour: tour, text: text, onclick: onclick }, extra || {}));
    },
    Message: function (role, text) {
      return el("div", { className: "message", item: "message", "data-role": role, text: text || "" });
    },
    Notice: function (level, text) {
      return el("div", { className: "notice", item: "notice", "data-level": level, text: text });
    },
    ToolCall: function (callId, name, args) {
      var status = el("span", { className: "status", text: " …" });
      var node = el("details", { className: "tool-call", item: "tool-call", "data-call-id": callId,
                                 "data-name": name, "data-status": "running" }, [
        el("summary", {}, ["⚙ " + name + " ", status]),
        el("pre", { className: "args", item: "tool-args", text: args || "" }),
        el("pre", { className: "result", item: "tool-result", text: "" })
      ]);
      node._status = status;
      return node;
    },
    Card: function (tour, title) {
      return el("div", { className: "card", tour: tour, role: "group", "aria-label": title }, [el("h3", { text: title })]);
    },
    SessionItem: function (title, current, onOpen, onRename, onDelete) {
      // the title is text, never markup: a session named "<img onerror=…>" shows those characters
      var name = el("span", { className: "session-title", item: "session-title", text: title, title: title });
      var item = el("li", { item: "session-item", className: current ? "current" : "" }, [
        name,
        el("button", { type: "button", className: "session-action", item: "session-rename", "aria-label": "Rename",
                       title: "Rename", text: "✎" }),
        el("button", { type: "button", className: "session-action", item: "session-delete", "aria-label": "Delete",
                       title: "Delete", text: "🗑" })
      ]);
      name.addEventListener("click", onOpen);
      item.children[1].addEventListener("click", function (e) { e.stopPropagation(); onRename(item, name); });
      item.children[2].addEventListener("click", function (e) { e.stopPropagation(); onDelete(item, e.currentTarget); });
      return item;
    },
    Tab: function (id, text, selected, onclick) {
      return el("button", { type: "button", item: "terminal-tab", "data-tab": id, text: text,
                            "aria-selected": selected ? "true" : "false", onclick: onclick });
    }
  };
  root.HermesComponents = C;
})(window);
