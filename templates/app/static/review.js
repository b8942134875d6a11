// The review workspace: flag navigation and keyboard shortcuts, partial updates of one sentence,
// the source pane, the checker's verdict while an edit is typed, and the sign-off dialog.
// Without scripts every form and link still works (POST and redirect, pages of their own).
(function () {
  "use strict";
  const review = document.getElementById("review");
  if (!review) { return; }
  const narrow = window.matchMedia("(max-width: 50rem)");
  let current = null;

  function openFlags() {
    return Array.from(review.querySelectorAll(".sentence[data-open-flag]"));
  }

  function setCurrent(sentence) {
    if (current && current !== sentence) { current.classList.remove("current"); }
    current = sentence;
    if (sentence) { sentence.classList.add("current"); }
  }

  function focusSentence(sentence) {
    if (!sentence) { return; }
    const section = sentence.closest("details");
    if (section && !section.open) { section.open = true; }
    setCurrent(sentence);
    sentence.focus({ preventScroll: true });
    sentence.scrollIntoView({ block: "center" });
  }

  function focusSign() {
    const sign = document.getElementById("sign");
    if (sign && !sign.disabled) { sign.focus(); sign.scrollIntoView({ block: "center" }); }
  }

  // The next (or previous) open flag from the current sentence, in the draft's order.
  function step(direction) {
    const flags = openFlags();
    if (!flags.length) { focusSign(); return; }
    let position = flags.indexOf(current);
    if (position === -1) {
      const after = flags.findIndex(function (flag) {
        return current && (current.compareDocumentPosition(flag) & Node.DOCUMENT_POSITION_FOLLOWING);
      });
      position = after === -1 ? (direction > 0 ? -1 : 0) : (direction > 0 ? after - 1 : after);
    }
    focusSentence(flags[(position + direction + flags.length) % flags.length]);
  }

  function swap(fresh, id) {
    const found = fresh.getElementById(id);
    const old = document.getElementById(id);
    if (found && old) { old.replaceWith(document.importNode(found, true)); }
  }

  // One action's answer: the sentence and the parts that count flags replaced, then on to the
  // next open flag (an edit the checker still flags stays in focus).
  function applyUpdate(html, id, before) {
    const fresh = new DOMParser().parseFromString(html, "text/html");
    const update = fresh.getElementById("update");
    if (!update) { review.innerHTML = html; return; }
    const revision = update.dataset.revision;
    review.querySelectorAll('input[name="revision"]').forEach(function (input) { input.value = revision; });
    document.getElementById("revision").textContent = revision;
    const slot = document.getElementById("message-slot");
    slot.replaceChildren(...Array.from(fresh.getElementById("update-message").childNodes).map(function (node) {
      return document.importNode(node, true);
    }));
    const sentence = update.querySelector(":scope > ul > li.sentence");
    const old = document.getElementById(id);
    if (old && update.dataset.removed === "true") { old.remove(); }
    else if (old && sentence && !old.closest("#needs-review")) { old.replaceWith(document.importNode(sentence, true)); }
    ["progress", "needs-review", "sign-off"].forEach(function (part) { swap(fresh, part); });
    const acted = document.getElementById(id);
    if (acted && acted.hasAttribute("data-open-flag") && update.querySelector("#message") === null) {
      focusSentence(acted);
      return;
    }
    const next = before.slice(before.indexOf(id) + 1).concat(before)
      .map(function (flag) { return document.getElementById(flag); })
      .find(function (flag) { return flag && flag.hasAttribute("data-open-flag"); });
    if (next) { focusSentence(next); } else { setCurrent(acted); focusSign(); }
  }

  review.addEventListener("submit", async function (event) {
    const form = event.target;
    if (form.id === "sign-form") { event.preventDefault(); openSignDialog(form); return; }
    const url = form.getAttribute("action") || "";
    if (url.indexOf("/sentences/") === -1) { return; }
    event.preventDefault();
    const sentence = form.closest(".sentence");
    const id = sentence ? sentence.id : "";
    const before = openFlags().map(function (flag) { return flag.id; });
    const response = await fetch(url, {
      method: "POST",
      body: new URLSearchParams(new FormData(form, event.submitter)),
      headers: { "X-Requested-With": "provenote-sentence" },
      credentials: "same-origin",
    });
    applyUpdate(await response.text(), id, before);
  });

  async function openSource(link) {
    const sentence = link.closest(".sentence");
    setCurrent(sentence);
    const response = await fetch(link.getAttribute("href"), {
      headers: { "X-Requested-With": "provenote-source" },
      credentials: "same-origin",
    });
    // Rendered by the server with every piece of note text escaped.
    const html = await response.text();
    review.querySelectorAll(".source-slot").forEach(function (slot) { slot.replaceChildren(); });
    review.querySelectorAll("a.citation[aria-current]").forEach(function (other) { other.removeAttribute("aria-current"); });
    link.setAttribute("aria-current", "true");
    const target = narrow.matches && sentence ? sentence.querySelector(".source-slot") : document.getElementById("source-pane");
    target.innerHTML = html;
    const quote = target.querySelector("#quote");
    if (quote) { quote.scrollIntoView({ block: "nearest" }); }
  }

  review.addEventListener("click", function (event) {
    const chosen = event.target.closest(".sentence");
    if (chosen) { setCurrent(chosen); }
    const citation = event.target.closest("a.citation");
    if (citation) { event.preventDefault(); openSource(citation); return; }
    const jump = event.target.closest(".flag-link a");
    if (jump) {
      event.preventDefault();
      focusSentence(document.getElementById(jump.getAttribute("href").slice(1)));
      return;
    }
    if (event.target.closest("#cancel-sign")) {
      event.preventDefault();
      document.getElementById("sign-dialog").close();
    }
  });

  // The sentence in hand changes on a keyboard focus at once, on a pointer only with the click:
  // taking the actions off the previous sentence on press would move what is under the pointer.
  let pointing = false;
  review.addEventListener("pointerdown", function () { pointing = true; });
  document.addEventListener("pointerup", function () { setTimeout(function () { pointing = false; }); });
  review.addEventListener("focusin", function (event) {
    const sentence = event.target.closest(".sentence");
    if (sentence && !pointing) { setCurrent(sentence); }
  });

  // The checker's verdict on an edit as it is typed (debounced, checked on the server), and the
  // edit's changes against the draft; answers to older keystrokes are dropped.
  const pending = new WeakMap();
  async function check(area) {
    const form = area.form;
    const asked = (pending.get(form) || 0) + 1;
    pending.set(form, asked);
    const verdict = form.querySelector(".live-check");
    const changes = form.querySelector(".diff");
    const body = new URLSearchParams(new FormData(form));
    let answer;
    try {
      const response = await fetch(form.dataset.check, {
        method: "POST", body: body, headers: { "X-Requested-With": "provenote-check" }, credentials: "same-origin",
      });
      answer = await response.json();
    } catch (failure) {
      answer = { error: "The checker could not be reached; saving checks the sentence again." };
    }
    if (pending.get(form) !== asked) { return; }
    if (answer.error) { verdict.textContent = answer.error; verdict.dataset.verdict = "error"; return; }
    verdict.dataset.verdict = answer.verdict;
    const reasons = answer.reasons.map(function (item) { return item.kind + (item.reason ? ": " + item.reason : ""); });
    verdict.textContent = "Checker: " + answer.verdict + (answer.flagged ? "; still flagged: " + reasons.join("; ") : "; no flags");
    changes.replaceChildren(...answer.diff.map(function (part) {
      const piece = document.createElement(part.change === "added" ? "ins" : (part.change === "removed" ? "del" : "span"));
      piece.textContent = part.text;
      return piece;
    }).flatMap(function (piece) { return [piece, document.createTextNode(" ")]; }));
  }
  let typing = null;
  review.addEventListener("input", function (event) {
    const area = event.target.closest(".edit-form textarea");
    if (!area) { return; }
    clearTimeout(typing);
    typing = setTimeout(function () { check(area); }, 350);
  });

  async function openSignDialog(form) {
    const dialog = document.getElementById("sign-dialog");
    const response = await fetch(form.getAttribute("action"), {
      method: "POST",
      body: new URLSearchParams(new FormData(form)),
      headers: { "X-Requested-With": "provenote-sign" },
      credentials: "same-origin",
    });
    if (!response.ok) { review.innerHTML = await response.text(); return; }
    dialog.innerHTML = await response.text();
    dialog.showModal();
    const confirm = dialog.querySelector("#confirm-sign");
    if (confirm) { confirm.focus(); }
  }

  function act(selector) {
    const control = current && current.querySelector(selector);
    if (control) { control.click(); }
  }

  document.addEventListener("keydown", function (event) {
    const field = event.target.closest && event.target.closest("textarea, input, select");
    if (field) {
      const form = field.form;
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && form) {
        event.preventDefault();
        const save = form.querySelector("button.save");
        if (save) { save.click(); }
      } else if (event.key === "Escape" && field.closest("details.edit")) {
        event.preventDefault();
        field.closest("details.edit").open = false;
        focusSentence(field.closest(".sentence"));
      }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey || document.querySelector("dialog[open]")) { return; }
    switch (event.key) {
      case "j": step(1); break;
      case "k": step(-1); break;
      case "a": act("button.accept"); break;
      case "e": {
        const editor = current && current.querySelector("details.edit");
        if (!editor) { return; }
        editor.open = true;
        editor.querySelector("textarea").focus();
        break;
      }
      case "o": act("a.citation"); break;
      case "s": {
        const sign = document.getElementById("sign");
        if (sign && !sign.disabled) { sign.click(); }
        break;
      }
      case "?": {
        const list = document.getElementById("shortcuts");
        list.open = !list.open;
        break;
      }
      default: return;
    }
    event.preventDefault();
  });

  const nav = document.getElementById("flag-nav");
  if (nav) {
    nav.hidden = false;
    document.getElementById("next-flag").addEventListener("click", function () { step(1); });
    document.getElementById("previous-flag").addEventListener("click", function () { step(-1); });
  }
  const first = openFlags()[0];
  if (first) { focusSentence(first); }
})();
