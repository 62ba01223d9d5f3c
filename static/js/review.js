/* Keyboard-first review: shortcuts for the queue and the decision form.
   n: review next · c: claim · x: not a claim · 1-4: claim type (marks it a claim)
   e: escalate (focuses the reason) · /: focus the note · s or Ctrl+Enter: submit · Esc: leave a field */
(function () {
  "use strict";

  function isTyping(el) {
    if (!el) return false;
    if (el.isContentEditable || el.tagName === "TEXTAREA" || el.tagName === "SELECT") return true;
    return el.tagName === "INPUT" && ["radio", "checkbox", "submit", "button", "reset"].indexOf(el.type) === -1;
  }

  function decisionForm() {
    return document.getElementById("decision-form");
  }

  function pick(form, name, value) {
    var input = form.querySelector('input[name="' + name + '"][value="' + value + '"]');
    if (input) {
      input.checked = true;
      input.dispatchEvent(new Event("change", { bubbles: true }));
    }
    return input;
  }

  function clearClaimType(form) {
    form.querySelectorAll('input[name="claim_type"]').forEach(function (input) { input.checked = false; });
  }

  function submit(form) {
    if (!form || form.dataset.submitting === "1") return;
    if (typeof form.requestSubmit === "function") form.requestSubmit(); else form.submit();
  }

  // Keep the form coherent: a claim type only with a claim, a reason only with an escalation.
  function sync(form) {
    var verdict = form.querySelector('input[name="verdict"]:checked');
    var reason = form.querySelector('textarea[name="escalation_reason"]');
    if (verdict && verdict.value !== "claim") clearClaimType(form);
    if (reason) {
      var escalating = verdict && verdict.value === "escalate";
      reason.closest(".escalation-reason").hidden = !escalating;
      if (!escalating) reason.value = "";
    }
  }

  document.querySelectorAll("form").forEach(function (form) {
    // One submission per page: a double click or a repeated key does not post twice.
    form.addEventListener("submit", function () {
      form.dataset.submitting = "1";
      form.querySelectorAll('button[type="submit"]').forEach(function (b) { b.disabled = true; });
    });
  });

  var form = decisionForm();
  if (form) {
    form.addEventListener("change", function (event) {
      if (event.target.name === "claim_type" && event.target.checked) pick(form, "verdict", "claim");
      if (event.target.name === "verdict") sync(form);
    });
    sync(form);
  }

  document.addEventListener("keydown", function (event) {
    var form = decisionForm();
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && form) {
      event.preventDefault();
      submit(form);
      return;
    }
    if (event.key === "Escape" && isTyping(document.activeElement)) {
      document.activeElement.blur();
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey || isTyping(event.target)) return;
    var handled = true;
    switch (event.key) {
      case "n":
        submit(document.getElementById("review-next"));
        break;
      case "c":
        if (form) pick(form, "verdict", "claim"); else handled = false;
        break;
      case "x":
        if (form) pick(form, "verdict", "no_claim"); else handled = false;
        break;
      case "e":
        if (form && pick(form, "verdict", "escalate")) {
          var reason = form.querySelector('textarea[name="escalation_reason"]');
          if (reason) reason.focus();
        } else handled = false;
        break;
      case "1": case "2": case "3": case "4":
        if (form) {
          var types = form.querySelectorAll('input[name="claim_type"]');
          var chosen = types[parseInt(event.key, 10) - 1];
          if (chosen) {
            pick(form, "verdict", "claim");
            chosen.checked = true;
            chosen.dispatchEvent(new Event("change", { bubbles: true }));
          }
        } else handled = false;
        break;
      case "/":
        var note = form && form.querySelector('textarea[name="note"]');
        if (note) note.focus(); else handled = false;
        break;
      case "s":
        if (form) submit(form); else handled = false;
        break;
      default:
        handled = false;
    }
    if (handled) event.preventDefault();
  });
})();
