// Clusterdeck's only hand-written script: copy buttons, confirming
// destructive actions, keeping the live log to its last lines, following the
// tail, and closing the phone menu. Everything else is htmx.
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
// bottom unless the reader scrolled up to read.
var MAX_LOG_LINES = 1000;
document.addEventListener("htmx:sseBeforeMessage", function (ev) {
  var box = document.getElementById("log-lines");
  if (box) box.dataset.atBottom = String(box.scrollHeight - box.scrollTop - box.clientHeight < 24);
});
document.addEventListener("htmx:sseMessage", function () {
  var box = document.getElementById("log-lines");
  if (!box) return;
  while (box.childElementCount > MAX_LOG_LINES) box.removeChild(box.firstElementChild);
  if (box.dataset.atBottom !== "false") box.scrollTop = box.scrollHeight;
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
// "confirm" the form is submitted again, marked, with the same button.
document.addEventListener("submit", function (ev) {
  var form = ev.target;
  if (!(form instanceof HTMLFormElement) || !form.hasAttribute("data-confirm")) return;
  if (form.dataset.confirmed === "true") { delete form.dataset.confirmed; return; }
  var dlg = document.getElementById("confirm-dialog");
  if (!dlg || typeof dlg.showModal !== "function") return; // the plain form posts
  ev.preventDefault();
  ev.stopPropagation();
  var submitter = ev.submitter || null;
  dlg.querySelector("#confirm-title").textContent = form.getAttribute("data-confirm");
  dlg.querySelector("#confirm-detail").textContent = form.getAttribute("data-confirm-detail") || "";
  var ok = dlg.querySelector("[data-testid=confirm-ok]");
  ok.textContent = form.getAttribute("data-confirm-label") || (submitter && submitter.textContent.trim()) || "Confirm";
  dlg.returnValue = "";
  dlg.onclose = function () {
    dlg.onclose = null;
    if (dlg.returnValue !== "confirm" || !form.isConnected) return;
    form.dataset.confirmed = "true";
    if (submitter && submitter.form === form) form.requestSubmit(submitter); else form.requestSubmit();
  };
  dlg.showModal();
}, true);
