/* The terminal pane: shell tabs (a shell on the server's pseudo-terminal, terminal.* methods) and
   read-only tabs of the agent's background processes. The page keeps each tab's screen as lines, which
   is what read_terminal reads. A shell whose screen the server emulates sends terminal.screen updates
   (the lines shown, the cursor, the lines scrolled off): full-screen programs draw where they mean to,
   and keys typed on the focused screen go to the shell as a terminal sends them. Without that, plain
   lines are kept from the raw output (control codes dropped). */
(function (root) {
  "use strict";
  var C = root.HermesComponents;
  var MAX_LINES = 5000;
  var ANSI = /\x1b\[[0-9;?<>=]*[ -\/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Za-z0-9]|\x1b[=>78cDEHM]/g;
  var rpc = null, tabs = {}, order = [], active = null, els = {};
  var KEYS = { Enter: "\r", Backspace: "\x7f", Tab: "\t", Escape: "\x1b", ArrowUp: "\x1b[A",
               ArrowDown: "\x1b[B", ArrowRight: "\x1b[C", ArrowLeft: "\x1b[D", Home: "\x1b[H",
               End: "\x1b[F", PageUp: "\x1b[5~", PageDown: "\x1b[6~", Delete: "\x1b[3~", Insert: "\x1b[2~",
               F1: "\x1bOP", F2: "\x1bOQ", F3: "\x1bOR", F4: "\x1bOS" };

  /* what a terminal sends for this key, or null (left to the browser: Ctrl+Shift copies, Meta, …) */
  function keyBytes(event, appCursorKeys) {
    if (event.metaKey || (event.ctrlKey && event.shiftKey)) return null;
    var alt = event.altKey ? "\x1b" : "";
    if (event.ctrlKey) {
      if (event.key === " ") return "\x00";
      if (event.key.length !== 1) return null;
      var code = event.key.toUpperCase().charCodeAt(0);
      return code >= 64 && code <= 95 ? alt + String.fromCharCode(code - 64) : null;
    }
    var sent = KEYS[event.key];
    if (sent && appCursorKeys && /^\x1b\[[ABCDHF]$/.test(sent)) sent = "\x1bO" + sent.charAt(2);
    if (sent) return alt + sent;
    return event.key.length === 1 ? alt + event.key : null;
  }

  /* the tab's lines as read_terminal and the screen show them: scrollback, then the screen up to its
     last written line or the cursor, whichever is lower */
  function linesOf(tab) {
    if (!tab.screen) return tab.lines;
    var shown = tab.screen.lines, last = tab.screen.cursor[0];
    for (var i = shown.length - 1; i > last; i--) { if (shown[i]) { last = i; break; } }
    return tab.scroll.concat(shown.slice(0, last + 1));
  }

  function screenUpdate(tab, params) {
    if (!tab.screen) tab.scroll = [];
    tab.scroll = tab.scroll.concat(params.scrolled || []);
    if (tab.scroll.length > MAX_LINES) tab.scroll.splice(0, tab.scroll.length - MAX_LINES);
    tab.screen = { lines: params.lines || [], cursor: params.cursor || [0, 0], appCursorKeys: !!params.app_cursor_keys };
    if (tab.id === active) render();
  }

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
    els.screen.textContent = "";
    if (tab && tab.screen && !tab.exited) {  /* the cursor as a block on its cell */
      var lines = linesOf(tab), row = tab.scroll.length + tab.screen.cursor[0], col = tab.screen.cursor[1];
      while (lines.length <= row) lines.push("");
      var line = lines[row];
      while (line.length < col) line += " ";
      var before = lines.slice(0, row).concat([line.slice(0, col)]).join("\n");
      var cursor = document.createElement("span");
      cursor.className = "terminal-cursor";
      cursor.textContent = line.charAt(col) || " ";
      els.screen.append(before, cursor, [line.slice(col + 1)].concat(lines.slice(row + 1)).join("\n"));
    } else if (tab) {
      els.screen.textContent = linesOf(tab).join("\n");
    }
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
      els.screen.tabIndex = 0;  /* focused, the screen takes keys as a terminal window does */
      els.screen.addEventListener("keydown", function (event) {
        var tab = active && tabs[active];
        if (!tab || tab.kind !== "shell" || tab.exited) return;
        var data = keyBytes(event, !!(tab.screen && tab.screen.appCursorKeys));
        if (data === null) return;
        event.preventDefault();
        rpc.call("terminal.input", { terminal: active, data: data });
      });
      els.screen.addEventListener("paste", function (event) {
        var tab = active && tabs[active];
        if (!tab || tab.kind !== "shell" || tab.exited) return;
        event.preventDefault();
        rpc.call("terminal.input", { terminal: active, data: event.clipboardData.getData("text") });
      });
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
    output: function (params) {
      var tab = tabs[params.terminal];
      if (tab && !tab.screen) feed(tab, params.data);  /* an emulated screen comes as terminal.screen */
    },
    screen: function (params) { var tab = tabs[params.terminal]; if (tab) screenUpdate(tab, params); },
    exited: function (params) {
      var tab = tabs[params.terminal];
      if (!tab) return;
      if (tab.screen) { tab.lines = linesOf(tab); tab.screen = null; }
      tab.exited = true;
      feed(tab, "\n[shell ended, code " + params.code + "]\n");
      renderTabs();
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
      var lines = linesOf(tab), total = lines.length, count = args.count || 200;
      var start = args.start_line === undefined ? Math.max(0, total - count) : Math.min(args.start_line, total);
      var end = Math.min(total, start + count);
      var cursorRow = tab.screen ? tab.scroll.length + tab.screen.cursor[0] : total - 1;
      return { terminal: id, kind: tab.kind, total_lines: total, start: start, end: end,
               viewport_rows: tab.screen ? tab.screen.lines.length : viewportRows(), cursor_row: cursorRow,
               cursor_col: tab.screen ? tab.screen.cursor[1] : undefined,
               text: lines.slice(start, end).join("\n") };
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
      var text = tab.screen ? tab.screen.lines.join("\n").replace(/\s+$/, "")
                            : tab.lines.slice(-viewportRows()).join("\n");
      return { caption: tab.title + " (" + tab.id + ")", text: text };
    },
    tabs: function () { return order.map(function (id) { return { id: id, kind: tabs[id].kind }; }); }
  };
  root.HermesTerminal = T;
})(window);
