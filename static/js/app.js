// Clusterdeck's only hand-written script: copy buttons, confirming
// destructive actions, busy buttons, keeping the live log to its last lines,
// following the tail (or not), the quote's countdown, and closing the phone
// menu. Everything else is htmx.
document.addEventListener("click", function (ev) {
  var btn = ev.target.closest("[data-copy]");
  if (!btn) return;
  var src = document.getElementById(btn.getAttribute("data-copy"));
  if (!src || !navigator.clipboard) return;
  navigator.clipboard.writeText(src.innerText).then(function () {
    var old = btn.textContent;
    btn.textContent = "Copied";
    setTimeout(function () { btn.textContent = old; }, 1200);
  });
});

// The log panel keeps the last MAX_LOG_LINES lines and stays scrolled to the
// bottom unless the reader scrolled up to read or paused following
// ([data-log-follow], aria-pressed). [data-log-status] says whether the
// stream is live.
var MAX_LOG_LINES = 1000;
function logFollowing() {
  var btn = document.querySelector("[data-log-follow]");
  return !btn || btn.getAttribute("aria-pressed") !== "true";
}
function setLogStatus(state, text) {
  var el = document.querySelector("[data-log-status]");
  if (!el) return;
  el.dataset.state = state;
  el.querySelector("[data-log-status-text]").textContent = text;
}
document.addEventListener("htmx:sseBeforeMessage", function (ev) {
  // htmx processes the preserved stream again after a poll, so one message
  // can reach two listeners: swap each message in once.
  if (ev.detail && typeof ev.detail === "object") {
    if (ev.detail.__swapped) { ev.preventDefault(); return; }
    ev.detail.__swapped = true;
  }
  var box = document.getElementById("log-lines");
  if (box) box.dataset.atBottom = String(box.scrollHeight - box.scrollTop - box.clientHeight < 24);
});
document.addEventListener("htmx:sseMessage", function () {
  var box = document.getElementById("log-lines");
  if (!box) return;
  while (box.childElementCount > MAX_LOG_LINES) box.removeChild(box.firstElementChild);
  if (logFollowing() && box.dataset.atBottom !== "false") box.scrollTop = box.scrollHeight;
});
// The page's poll keeps the log section (hx-preserve) by moving it into the
// new part, and a moved box forgets its scroll position: note where the
// reader was before any swap and put them back after it — at the newest
// line when they were following it.
document.addEventListener("htmx:beforeSwap", function () {
  var box = document.getElementById("log-lines");
  if (box) box.__kept = { top: box.scrollTop, atBottom: box.scrollHeight - box.scrollTop - box.clientHeight < 24 };
});
document.addEventListener("htmx:afterSwap", function () {
  var box = document.getElementById("log-lines");
  if (!box || !box.__kept) return;
  box.scrollTop = logFollowing() && box.__kept.atBottom ? box.scrollHeight : box.__kept.top;
  delete box.__kept;
});
document.addEventListener("htmx:sseOpen", function () { setLogStatus("live", "Live"); });
document.addEventListener("htmx:sseError", function () { setLogStatus("reconnecting", "Reconnecting…"); });
// The server ends the stream ("end") once the cluster ended and every line
// was sent: nothing more will come, so the stream closes instead of retrying.
document.addEventListener("htmx:sseClose", function (ev) {
  if (ev.detail && ev.detail.type === "message") setLogStatus("ended", "Ended: every line is shown");
});
document.addEventListener("click", function (ev) {
  var btn = ev.target.closest("[data-log-follow]");
  if (!btn) return;
  var pause = btn.getAttribute("aria-pressed") !== "true";
  btn.setAttribute("aria-pressed", String(pause));
  btn.textContent = pause ? "Resume following" : "Pause following";
  var box = document.getElementById("log-lines");
  if (!pause && box) box.scrollTop = box.scrollHeight;
});

// "Forgot your password?" takes the address typed so far along
// (data-carry-email names the field).
document.addEventListener("click", function (ev) {
  var a = ev.target.closest("a[data-carry-email]");
  var field = a && document.getElementById(a.getAttribute("data-carry-email"));
  if (field && field.value) a.href = a.pathname + "?email=" + encodeURIComponent(field.value.trim());
});

// The phone menu (a <details>) closes on a click outside it or on Escape.
function closeMenus(except) {
  document.querySelectorAll("details[data-testid=nav-menu][open]").forEach(function (d) {
    if (d !== except) d.open = false;
  });
}
document.addEventListener("click", function (ev) { closeMenus(ev.target.closest("details[data-testid=nav-menu]")); });
document.addEventListener("keydown", function (ev) { if (ev.key === "Escape") closeMenus(null); });

// A form with data-confirm asks first in the styled <dialog> of the layout
// (#confirm-dialog), naming the object. The listener runs in the capture
// phase, before htmx's own submit handler, so htmx forms wait too; on
// "confirm" the form is submitted again, marked, with the same button. A
// poll may have re-rendered the form while the dialog was open (the cluster
// page's live region every few seconds): the form is then found again by
// its action, which names the object and never changes, and that one is
// sent. If the action is gone from the page (the cluster ended meanwhile),
// nothing is sent and the dialog says so instead of closing silently.
function confirmKey(form) { return form.getAttribute("action") || form.getAttribute("hx-post") || ""; }
function currentForm(form) {
  if (form.isConnected) return form;
  var key = confirmKey(form);
  if (!key) return null;
  var found = null;
  document.querySelectorAll("form[data-confirm], form[data-confirm-over]").forEach(function (f) {
    if (!found && confirmKey(f) === key) found = f;
  });
  return found;
}
function sameSubmitter(submitter, form) {
  if (!submitter) return null;
  if (submitter.form === form) return submitter;
  var id = submitter.getAttribute("data-testid");
  var btns = Array.prototype.slice.call(submitButtons(form));
  return btns.filter(function (b) { return id && b.getAttribute("data-testid") === id; })[0] || btns[0] || null;
}
// showConsequence styles the dialog for what the form does
// (views.ConsequenceStyles, rendered in the dialog): the kind's line above
// the question, its class on the button. A form that names none is taken
// for the gravest, a destroying one.
function showConsequence(dlg, ok, kind) {
  var style = dlg.querySelector('[data-kind="' + (kind || "destroy") + '"]') || dlg.querySelector('[data-kind="destroy"]');
  dlg.querySelectorAll("[data-kind]").forEach(function (k) { k.hidden = k !== style || !k.textContent; });
  ok.className = style ? style.getAttribute("data-button") : "btn-danger";
  dlg.setAttribute("data-consequence", style ? style.getAttribute("data-kind") : "destroy");
}
function confirmLost(dlg, ok) {
  dlg.querySelectorAll("[data-kind]").forEach(function (k) { k.hidden = true; });
  dlg.querySelector("#confirm-title").textContent = "Nothing was sent";
  dlg.querySelector("#confirm-detail").textContent = "The page changed while this question was open and the action is no longer offered here. Reload the page to see where things stand.";
  ok.hidden = true;
  dlg.dataset.lost = "true";
  dlg.onclose = function () { dlg.onclose = null; ok.hidden = false; delete dlg.dataset.lost; };
  dlg.returnValue = "";
  dlg.showModal();
}
// parseAmount reads a typed dollar amount exactly as the server does
// (models.ParseTypedUSD, B3): an optional "$", whole dollars plain or
// grouped by commas in threes, at most two decimals. It answers
// {cents: n} or {error: the server's own message}. Change both together:
// one table of inputs tests each.
var amountProblems = {
  empty: "Give an amount in dollars, like 25.00.",
  negative: "Give a positive amount, like 25.00.",
  cents: "Give at most two decimals (cents), like 12.50.",
  commas: "Commas separate thousands, like 5,000; cents follow a point, like 5.00.",
  tooLarge: "That amount is too large."
};
function parseAmount(typed) {
  var s = String(typed).trim();
  if (s.charAt(0) === "$") s = s.slice(1).trim();
  if (s.charAt(0) === "-" || s.charAt(0) === "\u2212") return { error: amountProblems.negative };
  var at = s.indexOf(".");
  var whole = at < 0 ? s : s.slice(0, at), frac = at < 0 ? "" : s.slice(at + 1);
  if (whole === "" && frac === "") return { error: amountProblems.empty };
  if (frac.indexOf(",") >= 0) return { error: amountProblems.commas };
  if (!/^[0-9]*$/.test(frac)) return { error: amountProblems.empty };
  if (frac.length > 2) return { error: amountProblems.cents };
  if (whole.indexOf(",") >= 0) {
    if (!/^[0-9]{1,3}(,[0-9]{3})+$/.test(whole)) return { error: amountProblems.commas };
    whole = whole.replace(/,/g, "");
  }
  if (!/^[0-9]*$/.test(whole)) return { error: amountProblems.empty };
  whole = whole.replace(/^0+/, "");
  if (whole.length > 12) return { error: amountProblems.tooLarge };
  return { cents: Number(whole + (frac + "00").slice(0, 2)) };
}
window.clusterdeckParseAmount = parseAmount;
// dollars formats cents as the pages do: "$5,000.00".
function dollars(cents) {
  var whole = String(Math.floor(cents / 100)).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return "$" + whole + "." + String(cents % 100).padStart(2, "0");
}
// A form with data-confirm-over asks only when the amount in its
// data-confirm-field is above that many dollars (a large top-up), naming
// it. An amount the server would refuse (unreadable, or over
// data-confirm-max dollars) is not restated: the form goes as typed and the
// server's answer says what is wrong, beside the field.
function confirmTitle(form) {
  var over = form.getAttribute("data-confirm-over");
  if (over === null) return form.getAttribute("data-confirm");
  var field = form.elements[form.getAttribute("data-confirm-field") || "amount"];
  var a = field ? parseAmount(field.value) : { error: amountProblems.empty };
  if (a.error !== undefined) return null;
  var atMost = form.getAttribute("data-confirm-max");
  if (atMost !== null && a.cents > parseAmount(atMost).cents) return null;
  if (!(a.cents > parseAmount(over).cents)) return null;
  return "Add " + dollars(a.cents) + " to the balance?";
}
document.addEventListener("submit", function (ev) {
  var form = ev.target;
  if (!(form instanceof HTMLFormElement) || !(form.hasAttribute("data-confirm") || form.hasAttribute("data-confirm-over"))) return;
  if (form.dataset.confirmed === "true") { delete form.dataset.confirmed; return; }
  var title = confirmTitle(form);
  if (title === null) return; // under the amount that asks: sent as it is
  var dlg = document.getElementById("confirm-dialog");
  if (!dlg || typeof dlg.showModal !== "function") return; // the plain form posts
  ev.preventDefault();
  ev.stopPropagation();
  var submitter = ev.submitter || null;
  dlg.querySelector("#confirm-title").textContent = title;
  dlg.querySelector("#confirm-detail").textContent = form.getAttribute("data-confirm-detail") || "";
  var ok = dlg.querySelector("[data-testid=confirm-ok]");
  ok.hidden = false;
  ok.textContent = form.getAttribute("data-confirm-label") || (submitter && submitter.textContent.trim()) || "Confirm";
  showConsequence(dlg, ok, form.getAttribute("data-consequence"));
  dlg.returnValue = "";
  dlg.onclose = function () {
    // A "close" event is queued, not sent at once: the close of an earlier
    // question (cancelled) can arrive after this one opened. It is not
    // this question's answer.
    if (dlg.open) return;
    dlg.onclose = null;
    if (dlg.returnValue !== "confirm") return;
    var now = currentForm(form);
    if (!now) { confirmLost(dlg, ok); return; }
    var btn = sameSubmitter(submitter, now);
    now.dataset.confirmed = "true";
    if (btn) now.requestSubmit(btn); else now.requestSubmit();
  };
  dlg.showModal();
}, true);

// A checkbox with data-select-all="NAME" ticks or clears every checkbox
// named NAME in its form (the webhook form's event types), and follows
// them: ticked when all are, half when some are.
function namedBoxes(form, name) {
  return Array.prototype.filter.call(form.elements, function (b) { return b.type === "checkbox" && b.name === name; });
}
document.addEventListener("change", function (ev) {
  var el = ev.target;
  if (!(el instanceof HTMLInputElement) || el.type !== "checkbox" || !el.form) return;
  var group = el.getAttribute("data-select-all");
  if (group) {
    namedBoxes(el.form, group).forEach(function (b) { b.checked = el.checked; });
    return;
  }
  var head = Array.prototype.filter.call(el.form.elements, function (b) { return b.getAttribute && b.getAttribute("data-select-all") === el.name; })[0];
  if (!head) return;
  var boxes = namedBoxes(el.form, el.name);
  var ticked = boxes.filter(function (b) { return b.checked; }).length;
  head.checked = ticked === boxes.length;
  head.indeterminate = ticked > 0 && ticked < boxes.length;
});

// Busy feedback: a submitting button is disabled and aria-busy while its
// request runs (the CSS draws a spinner), and the region an htmx form or
// control swaps is aria-busy meanwhile (the offers dim). Polls are not
// marked: only forms and controls a person used.
function setBusy(el, busy) {
  if (busy) {
    el.setAttribute("aria-busy", "true");
    if ("disabled" in el) { el.dataset.wasDisabled = String(el.disabled); el.disabled = true; }
  } else if (el.getAttribute("aria-busy") === "true") {
    el.removeAttribute("aria-busy");
    if ("disabled" in el) { el.disabled = el.dataset.wasDisabled === "true"; delete el.dataset.wasDisabled; }
  }
}
function submitButtons(form) {
  return form.querySelectorAll("button:not([type=button]):not([type=reset]), input[type=submit]");
}
var userTriggered = "form, button, select, input, textarea, a";
document.addEventListener("htmx:beforeRequest", function (ev) {
  var elt = ev.detail.elt;
  if (!elt.matches(userTriggered)) return;
  var form = elt instanceof HTMLFormElement ? elt : null;
  if (form) submitButtons(form).forEach(function (b) { setBusy(b, true); });
  else if (elt instanceof HTMLButtonElement) setBusy(elt, true);
  var target = ev.detail.target;
  if (target && target.setAttribute) { target.setAttribute("aria-busy", "true"); elt.busyTarget = target; }
});
document.addEventListener("htmx:afterRequest", function (ev) {
  var elt = ev.detail.elt;
  if (!elt.matches(userTriggered)) return;
  if (elt instanceof HTMLFormElement) submitButtons(elt).forEach(function (b) { setBusy(b, false); });
  else if (elt instanceof HTMLButtonElement) setBusy(elt, false);
  // The region marked before the request (an error answer is retargeted).
  var target = elt.busyTarget;
  if (target) { target.removeAttribute("aria-busy"); elt.busyTarget = null; }
});
// A plain form (no htmx) navigates: its button is marked a tick later, once
// the browser has read the form (a disabled button would not be sent).
document.addEventListener("submit", function (ev) {
  if (ev.defaultPrevented) return;
  var form = ev.target, submitter = ev.submitter;
  if (form.method === "dialog" || form.target) return;
  setTimeout(function () {
    if (submitter && submitter.form === form) setBusy(submitter, true);
    else submitButtons(form).forEach(function (b) { setBusy(b, true); });
  }, 0);
});
// Back from the next page (back/forward cache): nothing is in flight.
window.addEventListener("pageshow", function (ev) {
  if (!ev.persisted) return;
  document.querySelectorAll("[aria-busy=true]").forEach(function (el) { setBusy(el, false); el.removeAttribute("aria-busy"); });
});

// The quote's price lock counts down ([data-expires] and the server's
// [data-now], so the browser's own clock only measures time since the page
// came). When it lapses, [data-requote] fetches a fresh price in place.
function tickQuotes() {
  document.querySelectorAll("[data-expires]").forEach(function (el) {
    if (!el.dataset.seenAt) el.dataset.seenAt = String(Date.now());
    var left = Date.parse(el.dataset.expires) - Date.parse(el.dataset.now) - (Date.now() - Number(el.dataset.seenAt));
    var out = el.querySelector("[data-countdown]");
    if (left > 0) {
      var s = Math.ceil(left / 1000);
      out.textContent = Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0") + " left";
      return;
    }
    if (el.dataset.lapsed) return;
    el.dataset.lapsed = "true";
    out.textContent = "lapsed";
    var again = document.querySelector("[data-requote]");
    if (again) { again.hidden = false; again.click(); }
  });
}
setInterval(tickQuotes, 1000);
document.addEventListener("DOMContentLoaded", tickQuotes);
document.addEventListener("htmx:afterSettle", tickQuotes);

// A usage line ([data-usage-toggle]) opens its machines with htmx and
// closes them again: aria-expanded says which, and a chevron turns with it.
document.addEventListener("htmx:beforeRequest", function (ev) {
  var a = ev.detail.elt;
  if (!a || !a.hasAttribute || !a.hasAttribute("data-usage-toggle")) return;
  if (a.getAttribute("aria-expanded") === "true") {
    ev.preventDefault();
    var box = document.getElementById(a.getAttribute("aria-controls"));
    if (box) box.innerHTML = "";
    a.setAttribute("aria-expanded", "false");
  }
});
document.addEventListener("htmx:afterSwap", function (ev) {
  var a = ev.detail.requestConfig && ev.detail.requestConfig.elt;
  if (a && a.hasAttribute && a.hasAttribute("data-usage-toggle")) a.setAttribute("aria-expanded", "true");
});

// A refused form answered on its POST URL ([data-replace-url], e.g. the
// GPU watch's) puts the page's own address back, so a reload or a shared
// link shows the page, not a POST-only URL.
(function () {
  var el = document.querySelector("[data-replace-url]");
  if (el && history.replaceState) history.replaceState(null, "", el.getAttribute("data-replace-url"));
})();
