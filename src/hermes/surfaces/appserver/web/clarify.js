/* The cards that answer the agent's requests. Clarify (T-CLAR, desktop): every question on one card;
   answers accumulate and stay editable until confirmed; "Confirm and continue" is enabled once one
   question has an answer and sends them all (blank ones count as skipped); "Skip" cancels them all.
   Approval: the command, why it asks, and the four choices. */
(function (root) {
  "use strict";
  var C = root.HermesComponents;

  function clarifyCard(request, answer) {
    var card = C.Card("clarify-card", request.questions.length > 1 ? "A few questions" : "A question");
    card.setAttribute("data-request", request.request_id);
    var state = request.questions.map(function (q) { return { text: "", picked: [] }; });
    var confirm = C.Button("clarify-confirm", "Confirm and continue", null, { className: "primary", disabled: true });
    var skip = C.Button("clarify-skip", "Skip");
    var rows = [];

    function value(i) {
      var q = request.questions[i], s = state[i], typed = s.text.trim();
      if (q.multi_select) {
        var picks = s.picked.slice();
        if (typed) picks.push(typed);
        return picks.length ? picks : null;
      }
      return typed || null;
    }

    function refresh() {
      var any = false;
      rows.forEach(function (row, i) {
        var answered = value(i) !== null;
        any = any || answered;
        row.setAttribute("data-state", answered ? "answered" : "unanswered");
        row.querySelectorAll(".choices button").forEach(function (b) {
          var on = request.questions[i].multi_select ? state[i].picked.indexOf(b.textContent) >= 0
                                                     : state[i].text.trim() === b.textContent;
          b.setAttribute("aria-pressed", on ? "true" : "false");
        });
      });
      confirm.disabled = !any;
    }

    request.questions.forEach(function (q, i) {
      var input = C.el("input", { type: "text", item: "clarify-answer", "aria-label": "Answer " + (i + 1),
                                  placeholder: q.choices && q.choices.length ? "or in your own words" : "your answer" });
      input.addEventListener("input", function () { state[i].text = input.value; refresh(); });
      input.addEventListener("keydown", function (e) {
        if (e.key === "Enter" && !confirm.disabled) { e.preventDefault(); confirm.click(); }
      });
      var choices = C.el("div", { className: "choices", item: "clarify-choices" }, (q.choices || []).map(function (choice) {
        return C.Button(null, choice, function () {
          if (q.multi_select) {
            var at = state[i].picked.indexOf(choice);
            if (at >= 0) state[i].picked.splice(at, 1); else state[i].picked.push(choice);
          } else {
            state[i].text = state[i].text.trim() === choice ? "" : choice;  // a second press takes it back
            input.value = state[i].text;
          }
          refresh();
        });
      }));
      var row = C.el("div", { className: "question", item: "clarify-question", "data-index": String(i),
                              "data-state": "unanswered" }, [
        C.el("div", { className: "question-text", text: (i + 1) + ". " + q.question + (q.multi_select ? " (pick any)" : "") }),
        choices, input
      ]);
      rows.push(row);
      card.appendChild(row);
    });

    function finish(label, params) {
      card.querySelectorAll("button, input").forEach(function (n) { n.disabled = true; });
      card.setAttribute("data-state", label);
      card.appendChild(C.el("div", { className: "notice", tour: "clarify-outcome", text: label === "confirmed"
        ? "Sent: " + request.questions.map(function (q, i) {
            var v = params.answers[i];
            return (i + 1) + ". " + (v === null ? "(skipped)" : Array.isArray(v) ? v.join(", ") : v);
          }).join("  ")
        : "Skipped: the agent was told you declined." }));
      return answer(params);
    }

    confirm.addEventListener("click", function () {
      if (confirm.disabled) return;
      finish("confirmed", { answers: request.questions.map(function (q, i) { return value(i); }) });
    });
    skip.addEventListener("click", function () { finish("skipped", { cancel: true }); });
    card.appendChild(C.el("div", { className: "actions" }, [confirm, skip]));
    return card;
  }

  function approvalCard(request, answer) {
    var card = C.Card("approval-card", "Allow this command?");
    card.setAttribute("data-request", request.request_id);
    card.appendChild(C.el("code", { tour: "approval-command", text: request.command || request.segment || "" }));
    if (request.reason) card.appendChild(C.el("p", { text: request.reason }));
    var labels = { once: "Allow once", session: "Allow for this session", always: "Always allow", deny: "Deny" };
    var buttons = (request.choices || ["once", "session", "always", "deny"]).map(function (choice) {
      return C.Button("approval-" + choice, labels[choice] || choice, function () {
        buttons.forEach(function (b) { b.disabled = true; });
        card.setAttribute("data-state", choice);
        answer({ choice: choice });
      }, { className: choice === "deny" ? "" : "primary" });
    });
    card.appendChild(C.el("div", { className: "actions" }, buttons));
    return card;
  }

  root.HermesCards = { clarify: clarifyCard, approval: approvalCard };
})(window);
