/* Projects: the top bar's project picker (projects.open for the current session: its file tools and
   terminal commands then work in the project's folders) and Settings → Projects (projects.create /
   projects.delete). Names and folders are shown as text. */
(function (root) {
  "use strict";
  var C = root.HermesComponents;
  var api = null, $ = function (id) { return document.getElementById(id); };
  var shown = [];  // the projects last listed

  function say(text, level) {
    var node = $("project-status");
    node.textContent = text || "";
    node.setAttribute("data-level", level || "info");
  }

  function fill(open) {
    var select = $("project-select");
    select.textContent = "";
    select.appendChild(C.el("option", { value: "", text: "No project" }));
    shown.forEach(function (p) {
      var option = C.el("option", { value: p.name, text: p.name, disabled: !p.opens,
                                    title: p.opens ? p.folders.join("\n") : p.problems.join("\n") });
      select.appendChild(option);
    });
    select.value = open || "";
  }

  // the picker shows the latest listing asked for: switching sessions quickly asks twice, and an answer for
  // the session left behind can come back last (the app server answers concurrently)
  var syncTurn = 0;

  async function sync(key) {
    var turn = ++syncTurn;
    var listed = await api.call("projects.list", key ? { session: key } : {});
    if (turn !== syncTurn) return;
    shown = listed.projects;
    fill(listed.open);
    renderList();
  }

  function renderList() {
    var list = $("project-list");
    list.textContent = "";
    shown.forEach(function (p) {
      var remove = C.el("button", { type: "button", item: "project-delete", "aria-label": "Delete " + p.name, text: "Delete" });
      remove.addEventListener("click", function () { removeProject(p.name); });
      list.appendChild(C.el("li", { item: "project", "data-project": p.name }, [
        C.el("strong", { text: p.name }), " ", remove,
        C.el("div", { className: "muted", text: p.folders.join(" · ") + (p.opens ? "" : " — " + p.problems.join("; ")) })
      ]));
    });
  }

  async function choose() {
    var name = $("project-select").value || null;
    try {
      var key = api.current() || await api.ensureSession();
      var opened = await api.call("projects.open", { session: key, name: name });
      if (key !== api.current()) return;  // the person moved on: the picker follows the session they are in
      await sync(key);
      api.notice(name ? "project " + name + ": the agent works in " + (opened.cwd || shown.filter(function (p) {
        return p.name === name; })[0].folders[0]) : "no project: the configured folders again");
    } catch (err) {
      api.notice(err.message, "error");
      await sync(api.current());
    }
  }

  async function create() {
    var folders = $("project-folders").value.split("\n").map(function (f) { return f.trim(); })
      .filter(function (f) { return f; });
    try {
      var made = await api.call("projects.create", { name: $("project-name").value, folders: folders });
      $("project-name").value = "";
      $("project-folders").value = "";
      say("created " + made.created.name);
      await sync(api.current());
    } catch (err) { say(err.message, "error"); }
  }

  async function removeProject(name) {
    try {
      await api.call("projects.delete", { name: name });
      say("deleted " + name + " (its folders stay as they are)");
      await sync(api.current());
    } catch (err) { say(err.message, "error"); }
  }

  root.HermesProjects = {
    init: function (options) {
      api = options;
      $("project-select").addEventListener("change", choose);
      $("project-create").addEventListener("click", create);
    },
    sync: function (key) { return sync(key).catch(function (err) { say(err.message, "error"); }); }
  };
})(window);
