// Follows the drafting job over server-sent events; reloads when it is done or failed.
(function () {
  "use strict";
  const section = document.getElementById("job");
  if (!section || ["done", "failed"].includes(section.dataset.state)) { return; }
  const events = new EventSource("/jobs/" + encodeURIComponent(section.dataset.job) + "/events");
  events.addEventListener("progress", function (message) {
    const job = JSON.parse(message.data);
    document.getElementById("stage").textContent = job.stage;
    document.getElementById("detail").textContent = job.detail;
    document.getElementById("progress").value = job.progress;
    document.getElementById("error").textContent = job.error || "";
    if (job.state === "done" || job.state === "failed") { events.close(); window.location.reload(); }
  });
})();
