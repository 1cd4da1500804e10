// The list of conversations: rename in place, delete with undo (the REST API does both).
(function () {
  "use strict";
  const list = document.getElementById("conversation-list");
  const token = document.querySelector("input[name=csrfmiddlewaretoken]");

  function api(id, method, body) {
    return fetch(`/api/conversations/${encodeURIComponent(id)}/${method === "POST" ? "restore/" : ""}`, {
      method,
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": token ? token.value : "" },
      body: body === undefined ? undefined : JSON.stringify(body),
    }).then((response) => {
      if (!response.ok) throw new Error(`the server answered ${response.status}`);
      return response.status === 204 ? null : response.json();
    });
  }

  function button(text, className) {
    const node = document.createElement("button");
    node.type = "button";
    node.className = `link ${className}`;
    node.textContent = text;
    return node;
  }

  // The link becomes a text box: Enter saves, Escape (or leaving it empty) keeps the old title.
  function rename(row) {
    const link = row.querySelector("a");
    const input = document.createElement("input");
    input.className = "rename-title";
    input.value = link.textContent === "Untitled" ? "" : link.textContent;
    input.maxLength = 200;
    input.setAttribute("aria-label", "New title");
    link.hidden = true;
    link.after(input);
    input.focus();
    input.select();
    let done = false;
    const finish = (save) => {
      if (done) return;
      done = true;
      const title = input.value.trim();
      input.remove();
      link.hidden = false;
      if (!save || !title) return;
      api(row.dataset.id, "PATCH", { title })
        .then((conversation) => {
          link.textContent = conversation.title;
          if (row.classList.contains("current")) document.title = `${conversation.title} · Eunice`;
        })
        .catch((error) => { link.title = `Not renamed: ${error.message}`; });
    };
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter") { event.preventDefault(); finish(true); }
      if (event.key === "Escape") finish(false);
    });
    input.addEventListener("blur", () => finish(true));
  }

  // Deleted at once on the server; Undo restores it. The open conversation's page goes
  // away with it, to the start page, which offers the same Undo.
  function remove(row) {
    api(row.dataset.id, "DELETE").then(() => {
      if (row.classList.contains("current")) { location.assign(`/?deleted=${encodeURIComponent(row.dataset.id)}`); return; }
      const kept = Array.from(row.childNodes);
      const title = row.querySelector("a").textContent;
      row.textContent = `“${title}” deleted. `;
      row.classList.add("deleted");
      const undo = button("Undo", "undo");
      undo.addEventListener("click", () => api(row.dataset.id, "POST").then(() => {
        row.textContent = "";
        row.classList.remove("deleted");
        kept.forEach((node) => row.appendChild(node));
      }));
      row.appendChild(undo);
      undo.focus();
    }).catch((error) => { row.title = `Not deleted: ${error.message}`; });
  }

  if (list) {
    list.addEventListener("click", (event) => {
      const row = event.target.closest("li[data-id]");
      if (!row) return;
      if (event.target.classList.contains("rename")) rename(row);
      else if (event.target.classList.contains("delete")) remove(row);
    });
  }
  document.querySelectorAll("[data-restore]").forEach((undo) => undo.addEventListener("click", () => {
    api(undo.dataset.restore, "POST").then(() => location.assign(`/c/${encodeURIComponent(undo.dataset.restore)}/`));
  }));
})();
