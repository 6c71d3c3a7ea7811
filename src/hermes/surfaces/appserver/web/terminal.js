/* The terminal pane: shell tabs (a shell on the server's pseudo-terminal, terminal.* methods) and
   read-only tabs of the agent's background processes. The page keeps each tab's screen as lines, which
   is what read_terminal reads. */
(function (root) {
  "use strict";
  var C = root.HermesComponents;
  var MAX_LINES = 5000;
  var ANSI = /\x1b\[[0-9;?<>=]*[ -\/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Za-z0-9]|\x1b[=>78cDEHM]/g;
  var rpc = null, tabs = {}, order = [], active = null, els = {};

  function feed(tab, data) {
    var text = data.replace(ANSI, "").replace(/\r\n/g, "\n").replace(/\x07/g, "");
    var line = tab.lines[tab.lines.length - 1];
    for (var i = 0; i < text.length; i++) {
      var ch = text[i];
      if (ch === "\n") { tab.lines[tab.lines.length - 1] = line; tab.lines.push(""); line = ""; }
      else if (ch === "\r") line = "";
      else if (ch === "\b") line = line.slice(0, -1);
      else if (ch >= " " || ch === "\t") line += ch;
    }
    tab.lines[tab.lines.length - 1] = line;
    if (tab.lines.length > MAX_LINES) tab.lines.splice(0, tab.lines.length - MAX_LINES);
    if (tab.id === active) render();
  }

  function renderTabs() {
    els.tabs.textContent = "";
    order.forEach(function (id) {
      var tab = tabs[id];
      els.tabs.appendChild(C.Tab(id, (tab.kind === "process" ? "⧗ " : "$ ") + tab.title, id === active,
                                 function () { select(id); }));
    });
    els.input.disabled = !active || tabs[active].kind !== "shell" || tabs[active].exited;
  }

  function render() {
    var tab = active && tabs[active];
    els.screen.textContent = tab ? tab.lines.join("\n") : "";
    els.screen.scrollTop = els.screen.scrollHeight;
  }

  function select(id) { active = id; renderTabs(); render(); }

  function add(tab) {
    tab.lines = tab.lines || [""];
    tabs[tab.id] = tab;
    if (order.indexOf(tab.id) < 0) order.push(tab.id);
    select(tab.id);
    return tab;
  }

  function remove(id) {
    delete tabs[id];
    order = order.filter(function (x) { return x !== id; });
    if (active === id) active = order.length ? order[order.length - 1] : null;
    renderTabs();
    render();
  }

  function viewportRows() {
    var lineHeight = parseFloat(getComputedStyle(els.screen).lineHeight) || 16;
    return Math.max(1, Math.floor(els.screen.clientHeight / lineHeight));
  }

  var T = {
    init: function (client, elements) {
      rpc = client; els = elements;
      els.input.addEventListener("keydown", function (event) {
        if (event.key !== "Enter" || !active || tabs[active].kind !== "shell") return;
        event.preventDefault();
        rpc.call("terminal.input", { terminal: active, data: els.input.value + "\n" });
        els.input.value = "";
      });
      renderTabs();
    },
    open: async function () {
      var opened = await rpc.call("terminal.open", { rows: 24, cols: 100 });
      add({ id: opened.terminal, kind: "shell", title: "shell " + (order.length + 1) });
      return opened.terminal;
    },
    type: function (text) { return rpc.call("terminal.input", { terminal: active, data: text }); },
    output: function (params) { var tab = tabs[params.terminal]; if (tab) feed(tab, params.data); },
    exited: function (params) {
      var tab = tabs[params.terminal];
      if (tab) { tab.exited = true; feed(tab, "\n[shell ended, code " + params.code + "]\n"); renderTabs(); }
    },
    /* a tool result that names a background process: a read-only tab shows what the agent saw of it */
    processSeen: function (processId, command, text) {
      var tab = tabs[processId] || add({ id: processId, kind: "process", title: command || processId });
      if (text) feed(tab, text.endsWith("\n") ? text : text + "\n");
      return tab;
    },
    read: function (args) {
      var id = args.terminal || active;
      var tab = id && tabs[id];
      if (!tab) return { error: id ? "no terminal tab " + id + " (open: " + (order.join(", ") || "none") + ")"
                                   : "no terminal tab is open" };
      var total = tab.lines.length, count = args.count || 200;
      var start = args.start_line === undefined ? Math.max(0, total - count) : Math.min(args.start_line, total);
      var end = Math.min(total, start + count);
      return { terminal: id, kind: tab.kind, total_lines: total, start: start, end: end,
               viewport_rows: viewportRows(), cursor_row: total - 1, text: tab.lines.slice(start, end).join("\n") };
    },
    close: async function (id) {
      var tab = tabs[id];
      if (!tab) return { error: "no terminal tab " + id + " (open: " + (order.join(", ") || "none") + ")" };
      if (tab.kind === "shell" && !tab.exited) await rpc.call("terminal.close", { terminal: id });
      remove(id);
      return { closed: id, kind: tab.kind, process_still_running: tab.kind === "process" ? true : undefined,
               tabs_left: order.slice() };
    },
    visible: function () {
      var tab = active && tabs[active];
      if (!tab) return { caption: "no terminal tab", text: "" };
      var rows = viewportRows();
      return { caption: tab.title + " (" + tab.id + ")", text: tab.lines.slice(-rows).join("\n") };
    },
    tabs: function () { return order.map(function (id) { return { id: id, kind: tabs[id].kind }; }); }
  };
  root.HermesTerminal = T;
})(window);
