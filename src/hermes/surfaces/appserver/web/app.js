/* The desktop app: sessions, the streamed conversation with its tool activity, the request cards, the
   dock (preview and terminals), settings, and the page side of the desktop_ui tools. It speaks only the
   app server's JSON-RPC API (docs/app-server.md) over one WebSocket. */
(function () {
  "use strict";
  var C = window.HermesComponents, Targets = window.HermesTargets, Tour = window.HermesTour;
  var Terminal = window.HermesTerminal, Preview = window.HermesPreview, Cards = window.HermesCards;
  var Pickers = window.HermesPickers, Projects = window.HermesProjects;
  var $ = function (id) { return document.getElementById(id); };

  var state = { ws: null, ids: 0, waiting: {}, current: null, views: {}, running: {}, assistant: {}, calls: {},
                prefs: { in_app_tips: true, in_app_tours: true, theme: "system" }, route: "/", dock: "preview",
                lastActivity: Date.now(), idleMs: 60000, tipPollMs: 30000, open: {} };

  // -- the API -----------------------------------------------------------------------------------------

  // the token comes once, in the address's fragment (never sent to a server); it is taken out of the
  // address at once and sent on the WebSocket as a subprotocol (a header), so no URL ever holds it
  var TOKEN = (function () {
    var match = /(?:^|[#&?])token=([^&]+)/.exec(location.hash + "&" + location.search);
    if (!match) return null;
    history.replaceState(null, "", location.pathname + "#/");
    return decodeURIComponent(match[1]);
  })();

  function call(method, params) {
    var id = ++state.ids;
    return new Promise(function (resolve, reject) {
      state.waiting[id] = { resolve: resolve, reject: reject };
      state.ws.send(JSON.stringify({ jsonrpc: "2.0", id: id, method: method, params: params || {} }));
    });
  }

  function connect() {
    return new Promise(function (resolve) {
      var address = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/rpc";
      var protocols = ["hermes"];
      if (TOKEN && /^[A-Za-z0-9._~-]+$/.test(TOKEN)) protocols.push("hermes.token." + TOKEN);
      else if (TOKEN) address += "?token=" + encodeURIComponent(TOKEN);  // a hand-made token with other characters
      var ws = new WebSocket(address, protocols);
      state.ws = ws;
      ws.onopen = function () { $("connection").textContent = "connected"; resolve(); };
      ws.onclose = function () {
        $("connection").textContent = "disconnected — reconnecting…";
        document.documentElement.dataset.connected = "false";
        setTimeout(function () { connect().then(hello); }, 1000);
      };
      ws.onmessage = function (frame) {
        var msg = JSON.parse(frame.data);
        if (msg.id !== undefined && state.waiting[msg.id]) {
          var w = state.waiting[msg.id];
          delete state.waiting[msg.id];
          if (msg.error) w.reject(new Error(msg.error.message)); else w.resolve(msg.result);
        } else if (msg.method) {
          notified(msg.method, msg.params || {});
        }
      };
    });
  }

  function notified(method, params) {
    if (method === "event") event(params);
    else if (method === "request") request(params);
    else if (method === "ui") ui(params);
    else if (method === "terminal.output") Terminal.output(params);
    else if (method === "terminal.screen") Terminal.screen(params);
    else if (method === "terminal.exited") Terminal.exited(params);
    else if (method === "session.deleted") { forgetSession(params.session); refreshSessions(); }
  }

  // -- sessions ----------------------------------------------------------------------------------------

  function view(key) {
    if (!state.views[key]) {
      state.views[key] = C.el("div", { className: "conversation", "data-session": key, hidden: true });
      $("transcript").appendChild(state.views[key]);
    }
    return state.views[key];
  }

  function select(key) {
    state.pick = (state.pick || 0) + 1;  // a resume answered after a later pick does not take the screen
    state.current = key;
    Object.keys(state.views).forEach(function (k) { state.views[k].hidden = k !== key; });
    view(key).hidden = false;
    $("stop").disabled = !state.running[key];
    renderSessions();
    state.projects = Projects.sync(key);
  }

  // Requests are answered concurrently, so answers can come back out of order: a list asked for before a
  // delete must not bring the deleted session back, so only the latest request's answer is used.
  async function refreshSessions() {
    var turn = state.listTurn = (state.listTurn || 0) + 1;
    var listed = await call("sessions.list", { limit: 50 });
    if (turn !== state.listTurn) return;
    state.stored = listed.sessions;
    listed.open.forEach(function (o) { state.open[o.session] = state.open[o.session] || { session_id: o.session_id }; });
    renderSessions();
  }

  function renderSessions() {
    var list = $("session-list");
    // a title being edited or a delete waiting for its confirmation is the person's, not ours to wipe:
    // the list is rebuilt when they are done (the rename's finish or the button's blur renders again)
    if (list.querySelector(".session-rename:not([data-done]), [data-armed]")) return;
    list.textContent = "";
    var shownIds = {}, byId = {};
    (state.stored || []).forEach(function (s) { byId[s.session_id] = s; });
    Object.keys(state.open).forEach(function (key) {
      var info = state.open[key], stored = info.session_id && byId[info.session_id];
      if (info.session_id) shownIds[info.session_id] = true;
      var title = info.title || (stored && (stored.title || stored.preview)) || "New session";
      var item = C.SessionItem(title, key === state.current, function () { select(key); },
                               rename({ session: key }), remove({ session: key }));
      item.setAttribute("data-session", key);
      list.appendChild(item);
    });
    (state.stored || []).forEach(function (s) {
      if (shownIds[s.session_id]) return;
      var item = C.SessionItem(s.title || s.preview || s.session_id, false, function () { resume(s.session_id); },
                               rename({ session_id: s.session_id }), remove({ session_id: s.session_id }));
      item.setAttribute("data-session-id", s.session_id);
      list.appendChild(item);
    });
  }

  // rename in place: the title becomes a text field; Enter saves, Esc (or leaving it) keeps the old title
  function rename(target) {
    return function (item, name) {
      var field = C.el("input", { className: "session-rename", item: "session-rename-input", "aria-label": "New title",
                                  value: name.textContent, maxlength: "200" });
      var done = false;
      var finish = async function (save) {
        if (done) return;
        done = true;
        field.setAttribute("data-done", "");  // the list may be rebuilt now
        var title = field.value.trim();
        if (save && title && title !== name.textContent) {
          try {
            var renamed = await call("sessions.rename", Object.assign({ title: title }, target));
            if (renamed.session && state.open[renamed.session]) state.open[renamed.session].title = renamed.title;
            await refreshSessions();
            return;
          } catch (err) { sidebarNotice(err.message); }
        }
        renderSessions();
      };
      field.addEventListener("keydown", function (e) {
        if (e.key === "Enter") { e.preventDefault(); finish(true); }
        else if (e.key === "Escape") { e.preventDefault(); e.stopPropagation(); finish(false); }
      });
      field.addEventListener("blur", function () { finish(false); });
      item.replaceChild(field, name);
      field.focus();
      field.select();
    };
  }

  // delete asks once more on the same button ("Delete?"), then removes the session for good
  function remove(target) {
    return async function (item, button) {
      if (!button.hasAttribute("data-armed")) {
        button.setAttribute("data-armed", "");
        button.textContent = "Delete?";
        button.setAttribute("aria-label", "Confirm delete");
        button.addEventListener("blur", function () {
          if (button.hasAttribute("data-armed")) { button.removeAttribute("data-armed"); renderSessions(); }
        }, { once: true });
        return;
      }
      button.removeAttribute("data-armed");
      try {
        var deleted = await call("sessions.delete", target);
        if (deleted.session) forgetSession(deleted.session);
        await refreshSessions();
      } catch (err) { sidebarNotice(err.message); renderSessions(); }
    };
  }

  function forgetSession(key) {
    delete state.open[key];
    if (state.views[key]) { state.views[key].remove(); delete state.views[key]; }
    if (state.current === key) { state.current = null; $("stop").disabled = true; Projects.sync(null); }
  }

  function sidebarNotice(text) {
    var old = $("session-notice");
    if (old) old.remove();
    $("sidebar").appendChild(C.el("div", { id: "session-notice", className: "notice", "data-level": "error",
                                           role: "alert", text: text }));
  }

  async function newSession(title) {
    var created = await call("sessions.create", title ? { title: title } : {});
    state.open[created.session] = { session_id: null, title: title || null };
    select(created.session);
    $("composer-input").focus();
    return created.session;
  }

  async function resume(sessionId) {
    var pick = state.pick = (state.pick || 0) + 1;
    var resumed = await call("sessions.resume", { session_id: sessionId });
    var key = resumed.session;
    state.open[key] = { session_id: sessionId, title: resumed.title };
    var v = view(key);
    v.textContent = "";
    resumed.messages.forEach(function (m) { if (m.content) v.appendChild(C.Message(m.role, m.content)); });
    if (pick === state.pick) select(key); else renderSessions();
    if (resumed.waiting) request(resumed.waiting);
    return key;
  }

  async function send(text) {
    var key = state.current || await newSession(text.slice(0, 60));
    view(key).appendChild(C.Message("user", text));
    scroll(key);
    try {
      var ended = state.turnsEnded = state.turnsEnded || {}, seen = ended[key] || 0;
      await call("message.send", { session: key, text: text });
      // the turn may have ended (a failure at once) before this answer came: then it is not running
      if ((ended[key] || 0) === seen) busy(key, true);
    } catch (err) {
      view(key).appendChild(C.Notice("error", err.message));
    }
  }

  function busy(key, running) {
    state.running[key] = running;
    if (key === state.current) $("stop").disabled = !running;
  }

  function scroll(key) { if (key === state.current) $("transcript").scrollTop = $("transcript").scrollHeight; }

  // -- events of the agent -----------------------------------------------------------------------------

  function event(p) {
    var key = p.session, v = view(key);
    if (p.session_id && state.open[key] && !state.open[key].session_id) { state.open[key].session_id = p.session_id; }
    switch (p.type) {
      case "text_delta":
        if (!state.assistant[key]) { state.assistant[key] = C.Message("assistant", ""); v.appendChild(state.assistant[key]); }
        state.assistant[key].textContent += p.text;
        busy(key, true);
        break;
      case "assistant_message":
        if (p.content && !state.assistant[key]) v.appendChild(C.Message("assistant", p.content));
        state.assistant[key] = null;
        break;
      case "tool_started":
        state.calls[p.call_id] = C.ToolCall(p.call_id, p.name, p.arguments);
        v.appendChild(state.calls[p.call_id]);
        break;
      case "tool_finished":
        toolFinished(p);
        break;
      case "notice":
        v.appendChild(C.Notice(p.level, p.message));
        break;
      case "retrying":
        v.appendChild(C.Notice("warning", "the model endpoint failed (" + p.reason + "); retrying"));
        break;
      case "turn_finished":
        state.turns = (state.turns || 0) + 1;
        state.turnsEnded = state.turnsEnded || {};
        state.turnsEnded[key] = (state.turnsEnded[key] || 0) + 1;
        state.assistant[key] = null;
        busy(key, false);
        v.querySelectorAll('[data-tour="clarify-card"]:not([data-state]), [data-tour="approval-card"]:not([data-state])')
          .forEach(function (card) { card.setAttribute("data-state", "expired"); });
        refreshSessions();
        break;
    }
    scroll(key);
  }

  function toolFinished(p) {
    var node = state.calls[p.call_id];
    if (node) {
      node.querySelector(".result").textContent = p.result;
      node.setAttribute("data-status", p.is_error ? "error" : "done");
      node._status.textContent = p.is_error ? " ✗" : " ✓ " + (p.seconds || 0).toFixed(1) + " s";
    }
    if (p.name !== "terminal" && p.name !== "process_manage") return;
    var parsed = null;
    try { parsed = JSON.parse(p.result); } catch (e) { return; }
    if (!parsed || typeof parsed.process_id !== "string") return;
    var args = {};
    try { args = JSON.parse(node ? node.querySelector(".args").textContent : "{}"); } catch (e) { /* keep {} */ }
    Terminal.processSeen(parsed.process_id, parsed.command || args.command,
                         parsed.output || parsed.new_output || parsed.log || "");
  }

  function request(p) {
    var key = p.session;
    var answer = function (params) {
      var method = p.kind === "clarify" ? "clarify.answer" : "approval.answer";
      return call(method, Object.assign({ session: key, request_id: p.request_id }, params)).catch(function (err) {
        view(key).appendChild(C.Notice("error", err.message));
      });
    };
    var card = p.kind === "clarify" ? Cards.clarify(p, answer) : Cards.approval(p, answer);
    view(key).appendChild(card);
    scroll(key);
  }

  // -- routes, panes, dock, theme ----------------------------------------------------------------------

  function navigate(route) {
    state.route = route === "/settings" ? "/settings" : "/";
    if (location.hash !== "#" + state.route) history.replaceState(null, "", "#" + state.route);
    $("settings-view").hidden = state.route !== "/settings";
    $("chat-view").hidden = state.route === "/settings";
    if (state.route === "/settings") {
      renderSettings();
      state.pickers = Pickers.render();
      state.projects = Projects.sync(state.current);
    }
  }

  function modelShown(current) {
    state.modelShownTurn = (state.modelShownTurn || 0) + 1;
    $("model").textContent = current ? current.model || current.provider : "no model set up";
  }

  function showDock(which) {
    state.dock = which === "terminal" ? "terminal" : "preview";
    $("preview-pane").hidden = state.dock !== "preview";
    $("terminal-pane").hidden = state.dock !== "terminal";
    $("preview-tab").setAttribute("aria-selected", String(state.dock === "preview"));
    $("terminal-tab").setAttribute("aria-selected", String(state.dock === "terminal"));
  }

  function showPane(pane) {
    if (pane === "sessions") { $("sidebar").classList.remove("collapsed"); (document.querySelector("#session-list li") || $("new-session")).focus(); }
    else if (pane === "chat") { navigate("/"); $("composer-input").focus(); }
    else if (pane === "settings") navigate("/settings");
    else if (pane === "preview") { showDock("preview"); $("preview-frame").focus(); }
    else if (pane === "terminal") { showDock("terminal"); $("terminal-input").focus(); }
    return { focused: pane, route: state.route, dock: state.dock };
  }

  function applyTheme(theme) {
    var dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
    var shown = theme === "system" ? (dark ? "dark" : "light") : theme;
    document.documentElement.dataset.theme = theme;
    document.documentElement.dataset.shownTheme = shown;
    return shown;
  }

  // Preference writes go one after another, in the order they were made (arrowing through the theme list
  // sends one per key): answered concurrently, an older answer could come back last and put the screen,
  // and the file, back to the older value.
  function setPrefs(change) {
    var next = (state.prefsQueue || Promise.resolve()).then(function () { return call("ui.prefs.set", change); });
    state.prefsQueue = next.catch(function () { /* the caller reports it; the queue goes on */ });
    return next;
  }

  async function setTheme(theme) {
    var shown = applyTheme(theme);
    state.prefs = (await setPrefs({ theme: theme })).prefs;
    renderSettings();
    return { theme: theme, shown: shown, background: getComputedStyle(document.body).backgroundColor };
  }

  function renderSettings() {
    $("tips-toggle").checked = !!state.prefs.in_app_tips;
    $("tours-toggle").checked = !!state.prefs.in_app_tours;
    $("theme-select").value = state.prefs.theme || "system";
  }

  async function setPref(name, value) {
    usePrefs((await setPrefs({ [name]: value })).prefs);
    renderSettings();
  }

  function usePrefs(prefs) {
    state.prefs = prefs;
    if (!prefs.in_app_tips) Tour.clearTip();  // off means off: the tip on screen goes too
    if (!prefs.in_app_tours) Tour.stop("turned off");
  }

  // -- tours and tips ----------------------------------------------------------------------------------

  var QUICK = [
    { selector: '[data-tour="sessions"]', title: "Sessions", text: "Your conversations. Pick one to continue it." },
    { selector: '[data-tour="composer"]', title: "Composer", text: "Type here; Enter sends." },
    { selector: '[data-tour="new-session"]', title: "New session", text: "Start a fresh conversation." },
    { selector: '[data-tour="model"]', title: "Model", text: "The model you are talking to." }
  ];
  var SCREEN = {
    "/": [
      { selector: '[data-tour="transcript"]', title: "Conversation", text: "Answers stream here; tool calls open to show their results." },
      { selector: '[data-tour="dock-tabs"]', title: "Preview and terminals", text: "Pages the agent shows, and your terminals." },
      { selector: '[data-tour="terminal-tab"]', title: "Terminals", text: "Open a shell next to the chat." },
      { selector: '[data-tour="settings-button"]', title: "Settings", text: "Appearance, tips and tours." }
    ],
    "/settings": [
      { selector: '[data-tour="tips-toggle"]', title: "Tips", text: "Turn in-app tips on or off." },
      { selector: '[data-tour="tours-toggle"]', title: "Tours", text: "Turn guided tours on or off." },
      { selector: '[data-tour="theme-select"]', title: "Theme", text: "Light, dark, or follow the system." }
    ]
  };

  async function resolve(selector, surface) {
    if (surface === "preview") return Preview.rect(selector);
    var el = Targets.find(document, selector);
    if (!el || !Targets.visible(el)) return null;
    el.scrollIntoView({ block: "nearest", inline: "nearest" });  // a long screen (settings) may hide it
    return Targets.box(el);
  }

  async function guiTour(a) {
    if (a.action === "stop") return { stopped: Tour.stop("agent") };
    if (a.action === "targets") {
      if (a.surface === "preview") {
        var answer = await Preview.call("targets");
        return answer.error ? answer : { surface: "preview", targets: answer.targets };
      }
      return { surface: "app", route: state.route, targets: Targets.listTargets(document) };
    }
    var steps = a.steps, skipped = [];
    if (!steps) {
      var wanted = QUICK.concat(a.preset === "quick" ? [] : SCREEN[state.route] || []);
      steps = [];
      for (var i = 0; i < wanted.length; i++) {
        if (await resolve(wanted[i].selector, "app")) steps.push(wanted[i]); else skipped.push(wanted[i].selector);
      }
      if (!steps.length) return { error: "none of the tour's targets is on screen", skipped: skipped };
    }
    var started = await Tour.start(steps, a.surface || "app");
    started.skipped = skipped.concat(started.skipped);
    started.preset = a.steps ? null : a.preset;
    return started;
  }

  function isIdle() {
    return Date.now() - state.lastActivity >= state.idleMs && !state.running[state.current] && !Tour.playing();
  }

  async function pollTips() {
    if (!state.prefs.in_app_tips) return null;
    var due = await call("tips.poll", { idle: isIdle() });
    if (!due.tip) return null;
    return Tour.showTip({ selector: due.tip.selector, title: due.tip.title, text: due.tip.text, source: "rotation",
                         expiresMs: 20000, waitMs: 0 });
  }

  // -- the desktop_ui tools: the page does it and says what happened -------------------------------------

  var OFF = {
    gui_tour: ["in_app_tours", "tours are turned off in this app (Settings → Appearance → In-app tours); the "
               + "tool leaves the model's tools from the next session"],
    show_tip: ["in_app_tips", "tips are turned off in this app (Settings → Appearance → In-app tips); the "
               + "tool leaves the model's tools from the next session"]
  };

  var ACTIONS = {
    read_terminal: function (a) { return Terminal.read(a); },
    close_terminal: function (a) { return Terminal.close(a.process_id); },
    desktop_preview: function (a) {
      if (a.action === "close") return Preview.close();
      showDock("preview");
      if (a.action === "read") {
        var shown = Preview.state();
        if (!shown) return { error: "the preview pane shows nothing" };
        if (shown.kind === "url") return { shown: "url", url: shown.url, note: "a live page of another site: its text cannot be read" };
        return Preview.call("read");
      }
      return Preview.show(a);
    },
    drive_preview: function (a) {
      showDock("preview");
      if ((a.action !== "read" && a.action !== "press") && !a.selector) return { error: "'selector' is required for " + a.action };
      return Preview.call(a.action, a);
    },
    annotate_preview: function (a) {
      showDock("preview");
      if (a.clear) return Preview.call("clear");
      if (!a.selector) return { error: "'selector' is required (or clear: true)" };
      return Preview.call("annotate", a);
    },
    read_window_below: async function (a) {
      var max = a.max_chars || 8000, out;
      if (state.dock === "terminal") {
        out = Object.assign({ pane: "terminal" }, Terminal.visible());
      } else {
        var shown = Preview.state();
        out = { pane: "preview", caption: $("preview-caption").textContent, text: "" };
        if (shown && shown.kind !== "url") out.text = (await Preview.call("read")).text || "";
        else if (shown) out.note = "a live page of another site: its text cannot be read";
      }
      out.text = (out.text || "").slice(0, max);
      return out;
    },
    focus_pane: function (a) { return showPane(a.pane); },
    react_to_message: function (a) {
      var role = a.message === "last_assistant" ? "assistant" : "user";
      var all = view(state.current || "").querySelectorAll('.message[data-role="' + role + '"]');
      var target = all[all.length - 1];
      if (!target) return { error: "no " + role + " message on screen to react to" };
      var box = target.querySelector(".reactions") || target.appendChild(C.el("span", { className: "reactions", item: "reactions" }));
      box.textContent += a.emoji;
      return { reacted: a.emoji, message: { role: role, text: target.firstChild.textContent.slice(0, 200) } };
    },
    gui_tour: guiTour,
    show_tip: function (a) { return Tour.showTip({ selector: a.selector, title: a.title, text: a.text, surface: a.surface }); },
    set_theme: function (a) { return setTheme(a.theme); }
  };

  async function ui(p) {
    if (p.prefs) usePrefs(p.prefs);
    var result;
    try {
      var off = OFF[p.action];
      if (off && !state.prefs[off[0]]) result = { error: off[1], refused: true };
      else if (!ACTIONS[p.action]) result = { error: "this app version does not know " + p.action };
      else result = await ACTIONS[p.action](p.args || {});
    } catch (err) {
      result = { error: p.action + " failed in the app: " + (err && err.message || err) };
    }
    await call("ui.result", { call_id: p.call_id, result: result });
  }

  // -- start ---------------------------------------------------------------------------------------------

  async function hello() {
    var answer = await call("ui.hello", {});
    state.prefs = answer.prefs;
    applyTheme(state.prefs.theme || "system");
    renderSettings();
    document.documentElement.dataset.connected = "true";
  }

  async function start() {
    Tour.init({
      location: function () { return { route: state.route, dock: state.dock }; },
      restore: function (at) { navigate(at.route); showDock(at.dock); },
      navigate: navigate, showPane: showPane, resolve: resolve,
      tourEnded: function (why) { document.documentElement.dataset.tourEnded = why; }
    });
    Pickers.init({ call: call, modelShown: modelShown });
    Projects.init({ call: call, current: function () { return state.current; }, ensureSession: newSession,
                    notice: function (text, level) { if (state.current) view(state.current).appendChild(C.Notice(level || "info", text)); } });
    $("model").addEventListener("click", function () {
      navigate("/settings");
      state.pickers.then(function () { $("model-select").focus(); });
    });
    Terminal.init({ call: call }, { tabs: $("terminal-tabs"), screen: $("terminal-screen"), input: $("terminal-input") });
    await Promise.all([connect(), Preview.init({ frame: $("preview-frame"), caption: $("preview-caption") })]);
    await hello();
    navigate(location.hash === "#/settings" ? "/settings" : "/");
    showDock("preview");
    $("composer").addEventListener("submit", function (e) {
      e.preventDefault();
      var text = $("composer-input").value.trim();
      if (!text) return;
      $("composer-input").value = "";
      send(text);
    });
    $("composer-input").addEventListener("keydown", function (e) {
      if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); $("composer").requestSubmit(); }
    });
    $("stop").addEventListener("click", function () { if (state.current) call("turn.interrupt", { session: state.current }); });
    $("new-session").addEventListener("click", function () { newSession(); });
    $("settings-button").addEventListener("click", function () { navigate(state.route === "/settings" ? "/" : "/settings"); });
    $("settings-close").addEventListener("click", function () { navigate("/"); });
    $("preview-tab").addEventListener("click", function () { showDock("preview"); });
    $("terminal-tab").addEventListener("click", function () { showDock("terminal"); });
    $("new-terminal").addEventListener("click", function () { Terminal.open(); });
    $("tips-toggle").addEventListener("change", function (e) { setPref("in_app_tips", e.target.checked); });
    $("tours-toggle").addEventListener("change", function (e) { setPref("in_app_tours", e.target.checked); });
    $("theme-select").addEventListener("change", function (e) { setTheme(e.target.value); });
    $("tips-restart").addEventListener("click", function () { call("tips.restart", {}); });
    window.addEventListener("hashchange", function () { navigate(location.hash.slice(1) || "/"); });
    ["keydown", "pointerdown", "wheel"].forEach(function (kind) {
      document.addEventListener(kind, function () { state.lastActivity = Date.now(); }, true);
    });
    setInterval(function () { pollTips().catch(function () { /* offline: try at the next tick */ }); }, state.tipPollMs);
    var shownAtStart = state.modelShownTurn || 0;
    call("models.list", {}).then(function (m) { if ((state.modelShownTurn || 0) === shownAtStart) modelShown(m.current); })
      .catch(function () { $("model").textContent = "model unknown"; });
    await refreshSessions();
    await Projects.sync(null);
    document.documentElement.dataset.ready = "true";
  }

  window.hermesApp = { state: state, call: call, pollTips: pollTips, navigate: navigate, showDock: showDock,
                       newSession: newSession, renderSessions: renderSessions, ready: start() };
})();
