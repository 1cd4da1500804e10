// The chat page: one websocket per conversation; chunks render as they arrive.
(function () {
  "use strict";
  const messages = document.getElementById("messages");
  const conversationId = messages.dataset.conversation;
  const form = document.getElementById("composer");
  const prompt = document.getElementById("prompt");
  const send = document.getElementById("send");
  const cancel = document.getElementById("cancel");
  const thinking = document.getElementById("thinking");
  const panel = document.getElementById("panel");
  // Cards shown in the side panel only, and those also shown inline (the spec's placement table).
  const INLINE_CARDS = new Set(["file_download", "chart"]);
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const socket = new WebSocket(`${scheme}://${location.host}/ws/conversations/${conversationId}/`);
  let answer = null;
  const tools = {};

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function busy(on) {
    send.disabled = on;
    cancel.disabled = !on;
  }

  function bubble(role, text) {
    const box = el("div", `message ${role}`);
    box.appendChild(el("div", "text", text));
    messages.appendChild(box);
    box.scrollIntoView({ block: "end" });
    return box;
  }

  function renderCard(card) {
    const box = el("div", `card card-${card.type || "unknown"}`);
    box.appendChild(el("div", "card-type", card.type || "card"));
    if (card.type === "file_download" && card.url) {
      const link = el("a", "download", card.filename || "Download");
      link.href = card.url;
      link.setAttribute("download", "");
      box.appendChild(link);
    } else if (card.type === "cited_answer") {
      box.appendChild(el("p", "", card.answer || ""));
      const list = el("ol", "sources");
      (card.sources || card.citations || []).forEach((s) => list.appendChild(el("li", "", s.title || s.source || JSON.stringify(s))));
      box.appendChild(list);
    } else if (Array.isArray(card.rows) && card.rows.length) {
      const table = el("table");
      const columns = Object.keys(card.rows[0]);
      const head = el("tr");
      columns.forEach((c) => head.appendChild(el("th", "", c)));
      table.appendChild(head);
      card.rows.forEach((row) => {
        const tr = el("tr");
        columns.forEach((c) => tr.appendChild(el("td", "", String(row[c] ?? ""))));
        table.appendChild(tr);
      });
      box.appendChild(table);
    } else if (card.svg) {
      const img = el("img");
      img.src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(card.svg);
      img.alt = card.title || "chart";
      box.appendChild(img);
    } else {
      box.appendChild(el("pre", "", JSON.stringify(card.data || card, null, 2)));
    }
    return box;
  }

  function showCards(cards, where) {
    (cards || []).forEach((card) => {
      panel.appendChild(renderCard(card));
      if (INLINE_CARDS.has(card.type) && where) where.appendChild(renderCard(card));
    });
  }

  function ask(chunk) {
    const box = el("form", "question");
    box.appendChild(el("p", "", chunk.text));
    const input = el("input");
    input.name = "answer";
    input.required = true;
    if (chunk.choices && chunk.choices.length) {
      const list = el("datalist");
      list.id = `choices-${chunk.question_id}`;
      chunk.choices.forEach((c) => { const o = el("option"); o.value = c; list.appendChild(o); });
      box.appendChild(list);
      input.setAttribute("list", list.id);
    }
    box.appendChild(input);
    box.appendChild(el("button", "", "Answer"));
    box.addEventListener("submit", (event) => {
      event.preventDefault();
      socket.send(JSON.stringify({ type: "answer", question_id: chunk.question_id, text: input.value }));
      box.replaceWith(el("p", "muted", `You answered: ${input.value}`));
    });
    messages.appendChild(box);
  }

  socket.addEventListener("message", (event) => {
    const chunk = JSON.parse(event.data);
    switch (chunk.type) {
      case "text_delta":
        if (!answer) answer = bubble("assistant", "");
        answer.querySelector(".text").textContent += chunk.text;
        break;
      case "thinking":
        thinking.hidden = false;
        thinking.querySelector("pre").textContent += chunk.text;
        break;
      case "tool_call": {
        const line = el("div", "tool running", `${chunk.status_message || "Running"} · ${chunk.name}…`);
        tools[chunk.tool_use_id] = line;
        messages.appendChild(line);
        break;
      }
      case "tool_result": {
        const line = tools[chunk.tool_use_id] || el("div", "tool");
        line.className = chunk.error ? "tool failed" : "tool done";
        line.textContent = "";
        const details = el("details");
        details.appendChild(el("summary", "", chunk.name + (chunk.error ? " failed" : " done")));
        details.appendChild(el("pre", "", chunk.content));
        line.appendChild(details);
        if (!line.parentNode) messages.appendChild(line);
        answer = null;  // text after a tool call starts a new bubble
        break;
      }
      case "question":
        ask(chunk);
        break;
      case "error":
        bubble("error", chunk.message);
        break;
      case "done":
        busy(false);
        if (chunk.cancelled) bubble("notice", "Cancelled.");
        fetch(`/api/conversations/${conversationId}/messages/`, { credentials: "same-origin" })
          .then((r) => r.json())
          .then((rows) => { const last = rows[rows.length - 1]; if (last && last.cards) showCards(last.cards, answer); });
        answer = null;
        break;
    }
  });

  socket.addEventListener("close", () => bubble("error", "Disconnected; reload the page to reconnect."));

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = prompt.value.trim();
    if (!text || socket.readyState !== WebSocket.OPEN) return;
    bubble("user", text);
    socket.send(JSON.stringify({ type: "message", text }));
    prompt.value = "";
    answer = null;
    busy(true);
  });

  prompt.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); form.requestSubmit(); }
  });

  // Stop waiting at once: the server cancels the stream or tool within 100 ms.
  cancel.addEventListener("click", () => {
    socket.send(JSON.stringify({ type: "cancel" }));
    busy(false);
  });
})();
