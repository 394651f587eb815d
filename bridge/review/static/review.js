// Keyboard shortcuts of the case page and evidence linking. No dependencies, no network.
(function () {
  "use strict";
  var form = document.getElementById("judge-form");
  if (!form) { return; }
  var comment = document.getElementById("comment");
  var skipForm = document.getElementById("skip-form");
  var nextForm = document.getElementById("next-form");
  var hint = document.getElementById("hint");
  var sent = false;

  function choose(value) {
    var radio = document.getElementById("label-" + value);
    if (radio && !radio.disabled) {
      radio.checked = true;
      if (hint) { hint.hidden = true; }
    }
  }

  function send(target) {
    // One submission per page: a second key press or click while the first is in flight does nothing.
    if (sent) { return; }
    sent = true;
    HTMLFormElement.prototype.submit.call(target);  // immune to a control named "submit"
  }

  function submitOrNext() {
    if (nextForm) { send(nextForm); return; }
    if (!form.querySelector("input[name=label]:checked")) {
      if (hint) { hint.hidden = false; }
      return;
    }
    send(form);
  }

  form.addEventListener("submit", function (event) {
    if (sent) { event.preventDefault(); return; }
    sent = true;
  });
  if (skipForm) {
    skipForm.addEventListener("submit", function (event) {
      if (sent) { event.preventDefault(); return; }
      sent = true;
    });
  }

  document.addEventListener("keydown", function (event) {
    var target = event.target;
    var typing = target && (target.tagName === "TEXTAREA" || (target.tagName === "INPUT" && target.type !== "radio"));
    if (typing) {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) { event.preventDefault(); submitOrNext(); }
      else if (event.key === "Escape") { target.blur(); }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) { return; }
    switch (event.key) {
      case "1": case "y": case "Y": choose("1"); break;
      case "2": case "n": case "N": choose("0"); break;
      case "Enter": case "ArrowRight": submitOrNext(); break;
      case "s": case "S": if (skipForm) { send(skipForm); } break;
      case "c": case "C": if (comment && !comment.disabled) { comment.focus(); } break;
      default: return;
    }
    event.preventDefault();
  });

  // Pointing at a quote in the history lights up where it sits in the chunk.
  var quotes = document.querySelectorAll("[data-quote]");
  Array.prototype.forEach.call(quotes, function (quote) {
    var id = quote.getAttribute("data-quote");
    var marks = document.querySelectorAll('mark[data-quotes~="' + id + '"]');
    function toggle(on) {
      Array.prototype.forEach.call(marks, function (mark) { mark.classList.toggle("active", on); });
    }
    quote.addEventListener("mouseenter", function () { toggle(true); });
    quote.addEventListener("mouseleave", function () { toggle(false); });
  });
}());
