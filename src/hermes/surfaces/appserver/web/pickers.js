/* Settings → Model and Settings → Tools: the provider, endpoint and model pickers (settings.get/set,
   models.list/select) and the tool picker of `hermes tools` (toolsets.list/enable/disable). Every change is
   written to config.yaml by the app server with its own checks and applies from the next session. */
(function (root) {
  "use strict";
  var C = root.HermesComponents;
  var api = null, $ = function (id) { return document.getElementById(id); };
  var NEXT = "applies from the next session";
  // Each model-list render or pick takes a number; an answer that comes back after a later one started is
  // dropped, so a slow list never overwrites a newer pick's status or the model shown in the top bar.
  var modelTurn = 0, toolTurn = 0;

  function say(id, text, level) {
    var node = $(id);
    node.textContent = text || "";
    node.setAttribute("data-level", level || "info");
  }

  function option(value, text, selected) {
    var node = C.el("option", { value: value, text: text });
    node.selected = !!selected;
    return node;
  }

  // -- model ---------------------------------------------------------------------------------------------

  async function renderModel(refresh) {
    var got = await api.call("settings.get", { keys: ["model.provider", "model.base_url"] });
    var entries = {};
    got.settings.forEach(function (e) { entries[e.key] = e; });
    var provider = entries["model.provider"], select = $("provider-select");
    select.textContent = "";
    var current = provider.value || "";
    select.appendChild(option("", "(not set: from the endpoint and keys)", !current));
    (provider.choices || []).forEach(function (name) { select.appendChild(option(name, name, name === current)); });
    $("base-url-input").value = entries["model.base_url"].value || "";
    await renderModels(refresh);
  }

  async function renderModels(refresh) {
    var turn = ++modelTurn;
    var listed = await api.call("models.list", refresh ? { refresh: true } : {});
    if (turn !== modelTurn) return false;
    var select = $("model-select"), current = listed.current && listed.current.model;
    select.textContent = "";
    var names = listed.models.slice();
    if (current && names.indexOf(current) < 0) names.unshift(current);
    names.forEach(function (name) { select.appendChild(option(name, name, name === current)); });
    select.disabled = !names.length;
    if (listed.error) say("model-status", listed.error, "error");
    else say("model-status", names.length + " model" + (names.length === 1 ? "" : "s") + " at the endpoint");
    api.modelShown(listed.current);
    return true;
  }

  async function saveProvider() {
    try {
      var provider = $("provider-select").value, url = $("base-url-input").value.trim();
      if (provider) await api.call("settings.set", { key: "model.provider", value: provider });
      else await api.call("settings.unset", { key: "model.provider" });
      if (url) await api.call("settings.set", { key: "model.base_url", value: url });
      else await api.call("settings.unset", { key: "model.base_url" });
      if (await renderModels(true)) say("model-status", $("model-status").textContent + "; the provider " + NEXT);
    } catch (err) { say("model-status", err.message, "error"); }
  }

  async function chooseModel() {
    try {
      var turn = ++modelTurn;
      var chosen = await api.call("models.select", { model: $("model-select").value });
      if (turn !== modelTurn) return;
      api.modelShown(chosen.current);
      say("model-status", "model " + chosen.current.model + " " + NEXT);
    } catch (err) { say("model-status", err.message, "error"); }
  }

  // -- tools ---------------------------------------------------------------------------------------------

  async function renderTools() {
    var turn = ++toolTurn;
    var listed = await api.call("toolsets.list", {});
    if (turn !== toolTurn) return false;
    var list = $("toolset-list");
    list.textContent = "";
    listed.toolsets.forEach(function (t) {
      var on = t.state === "on" || t.state === "partly";
      var box = C.el("input", { type: "checkbox", "aria-label": t.name, item: "toolset-toggle" });
      box.checked = on;
      box.disabled = t.state === "dropped";
      box.addEventListener("change", function () { toggle(t.name, box.checked); });
      var tools = t.tools.map(function (tool) {
        return C.el("li", { item: "tool", "data-tool": tool.name, "data-available": String(tool.available),
                            text: (tool.available ? "✓ " : "✗ ") + tool.name + (tool.available ? "" : " — " + tool.reason) });
      });
      list.appendChild(C.el("li", { item: "toolset", "data-toolset": t.name, "data-state": t.state }, [
        C.el("label", {}, [box, " " + t.name + " ", C.el("span", { className: "muted", text: t.state + (t.note ? " — " + t.note : "") })]),
        C.el("div", { className: "muted", text: t.description }),
        C.el("details", { item: "toolset-tools" }, [
          C.el("summary", { text: tools.length + " tool" + (tools.length === 1 ? "" : "s") +
                                  (t.tools.some(function (x) { return !x.available; }) ? " (some unavailable here)" : "") }),
          C.el("ul", { className: "tools" }, tools)])
      ]));
    });
    say("toolset-status", "a new session gets " + listed.tools.length + " tools here");
    return true;
  }

  async function toggle(name, on) {
    try {
      var changed = await api.call(on ? "toolsets.enable" : "toolsets.disable", { names: [name] });
      if (await renderTools()) say("toolset-status", changed.changed.join(" ") + " (" + NEXT + ")");
    } catch (err) { say("toolset-status", err.message, "error"); await renderTools(); }
  }

  root.HermesPickers = {
    init: function (options) {
      api = options;
      $("provider-save").addEventListener("click", saveProvider);
      $("model-select").addEventListener("change", chooseModel);
      $("models-refresh").addEventListener("click", function () { renderModels(true); });
    },
    render: function () {
      return Promise.all([renderModel(false), renderTools()]).catch(function (err) {
        say("model-status", err.message, "error");
      });
    },
    tools: renderTools
  };
})(window);
