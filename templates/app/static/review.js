// Partial updates for the review page: each form posts in the background and the server answers
// with the re-rendered review, which replaces the old one. Without scripts the forms still work.
(function () {
  "use strict";
  const review = document.getElementById("review");
  if (!review) { return; }
  review.addEventListener("submit", async function (event) {
    const form = event.target;
    const button = event.submitter;
    event.preventDefault();
    // getAttribute: form.action would be the button named "action", not the URL.
    const url = form.getAttribute("action");
    const body = new URLSearchParams(new FormData(form, button));
    const response = await fetch(url, {
      method: "POST",
      body: body,
      headers: { "X-Requested-With": "provenote-review" },
      credentials: "same-origin",
    });
    review.innerHTML = await response.text();
    const sentence = url.split("/sentences/")[1];
    const target = sentence && document.getElementById(decodeURIComponent(sentence));
    if (target) { target.scrollIntoView({ block: "center" }); }
  });
})();
