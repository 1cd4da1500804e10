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

  // An answer streams in as Markdown; `aria-busy` keeps a screen reader from reading
  // every chunk of it until it is done.
  function startAnswer() {
    const box = bubble("assistant", "");
    box.setAttribute("aria-busy", "true");
    box.markdown = window.EuniceMarkdown.stream(box.querySelector(".text"));
    return box;
  }

  // Draws what is left of the answer and gives it its Copy button (the Markdown as written).
  function finishAnswer(box) {
    const text = box.markdown ? box.markdown.finish() : box.querySelector(".text").textContent;
    box.removeAttribute("aria-busy");
    const actions = el("div", "answer-actions");
    actions.appendChild(window.EuniceMarkdown.copyButton("Copy answer", () => text));
    box.appendChild(actions);
  }

  // Answers stored before this page loaded: the server sent their Markdown as text.
  messages.querySelectorAll(".message.assistant").forEach((box) => {
    const text = box.querySelector(".text").textContent;
    window.EuniceMarkdown.render(box.querySelector(".text"), text);
    box.markdown = { finish: () => text };
    finishAnswer(box);
  });

  // A card's link only ever leads to a path of this site: never javascript:, data: or another host.
  function sameSitePath(url) {
    return typeof url === "string" && /^\/(?![\/\\])/.test(url) ? url : null;
  }

  function renderCard(card) {
    const box = el("div", `card card-${card.type || "unknown"}`);
    box.appendChild(el("div", "card-type", card.type || "card"));
    if (card.type === "file_download" && (card.url || card.file_id)) {
      const link = el("a", "download", `Download ${card.filename || "file"}`);
      link.href = sameSitePath(card.url) || `/files/${encodeURIComponent(card.file_id)}/`;
      link.setAttribute("download", "");
      box.appendChild(link);
    } else if (card.type === "cited_answer") {
      box.appendChild(el("p", "", card.answer || ""));
      const list = el("ol", "sources");
      (card.sources || card.citations || []).forEach((s) => list.appendChild(el("li", "", s.title || s.source || JSON.stringify(s))));
      box.appendChild(list);
    } else if (Array.isArray(card.rows) && card.rows.length) {
      // Rows as objects, or as arrays with the column names beside them.
      const columns = card.columns || Object.keys(card.rows[0]);
      const table = el("table");
      const head = el("tr");
      columns.forEach((c) => head.appendChild(el("th", "", c)));
      table.appendChild(head);
      card.rows.forEach((row) => {
        const tr = el("tr");
        columns.forEach((c, i) => tr.appendChild(el("td", "", String((Array.isArray(row) ? row[i] : row[c]) ?? ""))));
        table.appendChild(tr);
      });
      box.appendChild(table);
      if (card.total_rows && card.total_rows > card.rows.length) {
        box.appendChild(el("p", "muted", `${card.rows.length} of ${card.total_rows} rows shown`));
      }
    } else if (card.type === "chart" && (card.spec || card.vega_lite) && window.vegaEmbed) {
      const target = el("div", "chart");
      box.appendChild(target);
      window.vegaEmbed(target, card.spec || card.vega_lite, { actions: false, renderer: "svg" })
        .catch((error) => target.replaceWith(el("pre", "error", `The chart could not be drawn: ${error.message}`)));
    } else if (card.type === "map_display" && window.L) {
      box.appendChild(drawMap(card));
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

  // Maps draw their layers on a blank canvas: no tile server is needed (or reachable).
  function drawMap(card) {
    const holder = el("div", "map");
    holder.style.height = "260px";
    setTimeout(() => {
      const map = window.L.map(holder, { attributionControl: false });
      const group = window.L.featureGroup().addTo(map);
      (card.sources || []).forEach((source) => {
        if (source.type === "geojson" && source.data) {
          window.L.geoJSON(source.data, { pointToLayer: (f, latlng) => window.L.circleMarker(latlng, { radius: 4 }) }).addTo(group);
        }
      });
      (card.layers || []).forEach((layer) => {
        if (layer.geojson) window.L.geoJSON(layer.geojson).addTo(group);
        // An element, not a string: Leaflet puts a string tooltip in as HTML, and a
        // label can come from any data (a fetched page, an uploaded file).
        (layer.points || []).forEach((p) => window.L.circleMarker([p.lat, p.lon], { radius: 4 })
          .bindTooltip(el("span", "", String(p.label ?? ""))).addTo(group));
      });
      if (card.bounds) map.fitBounds(card.bounds);
      else if (group.getLayers().length) map.fitBounds(group.getBounds(), { padding: [10, 10] });
      else map.setView([0, 0], 1);
    });
    return holder;
  }

  // Shows cards in the panel (and inline under `where` for INLINE_CARDS); returns the nodes made.
  function showCards(cards, where) {
    const nodes = [];
    (cards || []).forEach((card) => {
      nodes.push(panel.appendChild(renderCard(card)));
      if (INLINE_CARDS.has(card.type) && where) nodes.push(where.appendChild(renderCard(card)));
    });
    return nodes;
  }

  // Cards stream in as their tools finish; when the answer is done, the stored
  // answer's cards (merged, citations added) replace them if they differ.
  let live = { cards: [], nodes: [] };
  function settleCards(final, where) {
    final = (final || []).filter((card) => card.type !== "approval");  // drawn in the thread, not the panel
    if (JSON.stringify(final || []) === JSON.stringify(live.cards)) { live = { cards: [], nodes: [] }; return; }
    live.nodes.forEach((node) => node.remove());
    live = { cards: [], nodes: [] };
    showCards(final, where);
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

  // A tool call waiting for the person (registry.approvals): exactly what it would run,
  // and Approve / Reject. The click goes over the socket with the hash of what is shown.
  const approvalBoxes = {};
  function showApproval(card) {
    if (approvalBoxes[card.approval_id]) return;
    const shown = card.shown || {};
    const box = el("div", "approval");
    box.dataset.approval = card.approval_id;
    box.appendChild(el("p", "approval-title", shown.title || `Run ${card.tool}?`));
    const facts = el("dl");
    let rows;
    if (shown.launch !== undefined) {
      rows = [["Command", shown.launch], ["Package", shown.package], ["Version", shown.version], ["Source", shown.source]];
    } else if (shown.arguments !== undefined) {
      rows = [["Tool", card.tool], ["Arguments", JSON.stringify(shown.arguments, null, 2)], ["Why", shown.note || `approval rule: ${shown.rule}`]];
    } else rows = [["Arguments", JSON.stringify(shown, null, 2)]];
    rows.forEach(([label, value]) => {
      facts.appendChild(el("dt", "", label));
      facts.appendChild(el("dd", label === "Arguments" ? "approval-arguments" : "", String(value ?? "")));
    });
    box.appendChild(facts);
    const approve = el("button", "approve", "Approve");
    const edit = el("button", "edit", "Edit");
    const reject = el("button", "reject", "Reject");
    const reason = el("input", "approval-reason");
    reason.placeholder = "Reason for a rejection (the assistant reads it)";
    reason.maxLength = 1000;
    const editor = el("textarea", "approval-editor");
    editor.hidden = true;
    editor.rows = 6;
    const status = el("p", "muted approval-status", "Waiting for your decision; the assistant cannot approve it.");
    const buttons = card.editable ? [approve, edit, reject] : [approve, reject];
    const entry = { box, buttons, status, sent: false };
    const send = (decision, extra) => {
      if (socket.readyState !== WebSocket.OPEN) { status.textContent = "Not connected; reload the page and try again."; return; }
      buttons.forEach((b) => { b.disabled = true; });
      entry.sent = true;
      status.textContent = decision === "reject" ? "Rejecting…" : "Approved; running…";
      socket.send(JSON.stringify({ type: "approval", approval_id: card.approval_id, decision, args_hash: card.args_hash, ...extra }));
    };
    approve.addEventListener("click", () => {
      if (editor.hidden) { send("approve", {}); return; }
      let edited;
      try { edited = JSON.parse(editor.value); } catch (error) { status.textContent = `The arguments are not valid JSON: ${error.message}`; return; }
      if (edited === null || typeof edited !== "object" || Array.isArray(edited)) { status.textContent = "The arguments must be a JSON object."; return; }
      send("edit", { arguments: edited });
    });
    edit.addEventListener("click", () => {
      editor.hidden = false;
      editor.value = JSON.stringify(shown.arguments || {}, null, 2);
      approve.textContent = "Approve edited";
      edit.disabled = true;
      editor.focus();
    });
    reject.addEventListener("click", () => send("reject", { reason: reason.value }));
    if (card.editable) box.appendChild(editor);
    buttons.forEach((b) => box.appendChild(b));
    box.appendChild(reason);
    box.appendChild(status);
    messages.appendChild(box);
    approvalBoxes[card.approval_id] = entry;
  }

  function settleApproval(card) {
    const entry = approvalBoxes[card.approval_id];
    if (!entry) return;
    entry.buttons.forEach((b) => { b.disabled = true; });
    entry.sent = false;
    entry.box.classList.add(`approval-${card.status}`);
    entry.status.textContent = `${card.status[0].toUpperCase()}${card.status.slice(1)}.`;
    if (card.outcome) entry.box.appendChild(el("pre", "approval-outcome", card.outcome));
  }

  JSON.parse(document.getElementById("pending-approvals").textContent || "[]").forEach(showApproval);

  // A delegated task (a helper) streams into a labelled pane of its own, never into the
  // answer: its text, its thinking and its tool lines. Its cards, questions and errors
  // are shown as any other.
  const panes = {};

  function pane(id) {
    if (!panes[id]) {
      const box = el("details", "subtask running");
      box.open = true;
      box.dataset.subtask = id;
      const summary = el("summary", "", `Helper ${id}`);
      const body = el("div", "subtask-body");
      box.appendChild(summary);
      box.appendChild(body);
      messages.appendChild(box);
      panes[id] = { box, summary, body, text: null, tools: {} };
    }
    return panes[id];
  }

  function subtaskChunk(chunk) {
    const p = pane(chunk.subtask);
    switch (chunk.type) {
      case "subtask_started":
        p.summary.textContent = `Helper ${chunk.subtask}: ${chunk.task}`;
        return true;
      case "subtask_text":
        if (!p.text) p.text = p.body.appendChild(el("div", "subtask-text", ""));
        p.text.textContent += chunk.text;
        return true;
      case "subtask_thinking":
        p.body.appendChild(el("div", "subtask-thinking muted", chunk.text));
        return true;
      case "tool_call": {
        p.tools[chunk.tool_use_id] = p.body.appendChild(el("div", "tool running", `${chunk.status_message || "Running"} · ${chunk.name}…`));
        p.text = null;
        return true;
      }
      case "progress":
        return true;
      case "tool_result": {
        const line = p.tools[chunk.tool_use_id] || p.body.appendChild(el("div", "tool"));
        line.className = chunk.error ? "tool failed" : "tool done";
        line.textContent = chunk.name + (chunk.error ? " failed" : " done");
        p.text = null;
        return true;
      }
      case "subtask_finished":
        p.box.classList.remove("running");
        p.box.classList.add("finished");
        p.summary.textContent += chunk.stop_reason === "end_turn" ? " · done" : ` · stopped (${chunk.stop_reason})`;
        return true;
    }
    return false;
  }

  socket.addEventListener("message", (event) => {
    const chunk = JSON.parse(event.data);
    if (chunk.subtask && subtaskChunk(chunk)) return;
    switch (chunk.type) {
      case "text_delta":
        if (!answer) answer = startAnswer();
        answer.markdown.append(chunk.text);
        break;
      case "thinking":
        thinking.hidden = false;
        thinking.querySelector("pre").textContent += chunk.text;
        break;
      case "tool_call": {
        const line = el("div", "tool running");
        const label = line.appendChild(el("span", "tool-label", `${chunk.status_message || "Running"} · ${chunk.name}…`));
        line.dataset.label = label.textContent;
        // Cancels this call only: it returns Cancelled and the answer goes on with the others.
        const stop = line.appendChild(el("button", "tool-cancel", "Cancel"));
        stop.type = "button";
        stop.title = `Stop this ${chunk.name} call; the answer goes on without it`;
        stop.addEventListener("click", () => {
          stop.disabled = true;
          socket.send(JSON.stringify({ type: "cancel", tool_use_id: chunk.tool_use_id }));
        });
        tools[chunk.tool_use_id] = line;
        messages.appendChild(line);
        break;
      }
      case "progress": {
        const line = tools[chunk.tool_use_id];
        const percent = typeof chunk.fraction === "number" ? ` (${Math.round(chunk.fraction * 100)} %)` : "";
        if (line && line.classList.contains("running")) {
          line.querySelector(".tool-label").textContent = `${line.dataset.label} ${chunk.message}${percent}`;
        } else messages.appendChild(el("div", "tool progress muted", `${chunk.message}${percent}`));
        break;
      }
      case "cancel_requested": {
        const line = chunk.tool_use_id && tools[chunk.tool_use_id];
        if (line && line.classList.contains("running")) line.querySelector(".tool-label").textContent = `${line.dataset.label} cancelling…`;
        break;
      }
      case "card": {
        if (chunk.card.type === "approval") { showApproval(chunk.card); break; }
        live.cards.push(chunk.card);
        let holder = null;  // inline cards get a place in the conversation, as after an answer
        if (INLINE_CARDS.has(chunk.card.type)) {
          holder = messages.appendChild(el("div", "message cards"));
          live.nodes.push(holder);
        }
        live.nodes.push(...showCards([chunk.card], holder));
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
        if (answer) finishAnswer(answer);
        answer = null;  // text after a tool call starts a new bubble
        break;
      }
      case "question":
        ask(chunk);
        break;
      case "approval_decided":
        settleApproval(chunk.card);
        bubble("user", chunk.text);
        break;
      case "error":
        bubble("error", chunk.message);
        if (chunk.refused) giveBack();
        // A decision the server refused: the buttons are usable again.
        Object.values(approvalBoxes).filter((e) => e.sent).forEach((e) => {
          e.sent = false;
          e.buttons.forEach((b) => { b.disabled = false; });
          e.status.textContent = "Not decided; see the error above.";
        });
        break;
      case "done": {
        busy(false);
        if (answer) finishAnswer(answer);
        if (chunk.cancelled) bubble("notice", "Cancelled.");
        if (chunk.notice) bubble("notice", chunk.notice);  // cut off at the output limit, or refused
        const where = answer;  // inline cards go under this answer
        fetch(`/api/conversations/${conversationId}/messages/?order=newest&limit=1`, { credentials: "same-origin" })
          .then((r) => r.json())
          .then((page) => { const last = page.results[0]; settleCards(last ? last.cards : [], where); });
        answer = null;
        break;
      }
    }
  });

  // Sending waits for the connection: nothing typed is silently dropped.
  send.disabled = true;
  send.title = "Connecting…";
  socket.addEventListener("open", () => { send.disabled = false; send.title = ""; });
  socket.addEventListener("close", () => {
    send.disabled = true;
    cancel.disabled = true;  // nothing to cancel on a closed socket
    // Say what is down (/health/ names each dependency) rather than only "disconnected".
    fetch("/health/", { credentials: "same-origin", cache: "no-store" })
      .then((r) => r.json())
      .then((health) => {
        const down = (health.down || []).map((name) => name.replace("_", " "));
        bubble("error", down.length
          ? `Disconnected: the server cannot reach its ${down.join(", ")}. Reload the page once it is back.`
          : "Disconnected; reload the page to reconnect.");
      })
      .catch(() => bubble("error", "Disconnected: the server is not answering. Reload the page once it is back."));
  });

  // The server refused the last message (a turn already running, a limit, a restart):
  // nothing was stored, so its bubble goes, its text returns to the composer, and the
  // composer is usable again.
  let sent = null;
  function giveBack() {
    busy(false);
    if (!sent) return;
    sent.box.remove();
    if (!prompt.value) prompt.value = sent.text;
    sent = null;
    prompt.focus();
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = prompt.value.trim();
    if (!text) return;
    if (socket.readyState !== WebSocket.OPEN) {
      bubble("error", "Not connected yet; try again in a moment.");
      return;
    }
    sent = { text, box: bubble("user", text) };
    socket.send(JSON.stringify({ type: "message", text }));
    prompt.value = "";
    answer = null;
    busy(true);
  });

  prompt.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); form.requestSubmit(); }
  });

  // Uploads go to the conversation's catalog; the model sees them as datasets.
  const upload = document.getElementById("upload");
  upload.addEventListener("submit", (event) => {
    event.preventDefault();
    const file = document.getElementById("upload-file").files[0];
    const status = document.getElementById("upload-status");
    if (!file) { status.textContent = "Choose a file first."; return; }
    const body = new FormData();
    body.append("file", file);
    const isDocument = /\.(txt|md|markdown|html?|pdf|docx)$/i.test(file.name);
    status.textContent = `Uploading ${file.name}…`;
    fetch(isDocument ? "/api/documents/" : `/api/conversations/${conversationId}/datasets/`, {
      method: "POST", body, credentials: "same-origin",
      headers: { "X-CSRFToken": document.querySelector("input[name=csrfmiddlewaretoken]").value },
    })
      .then((r) => r.json().then((data) => ({ ok: r.ok, data })))
      .then(({ ok, data }) => {
        if (!ok) status.textContent = `Upload failed: ${data.error || data.detail}`;
        else if (isDocument) status.textContent = `Document "${data.name}" uploaded: ask to index it into a corpus.`;
        else status.textContent = `Dataset "${data.name}" is ready (${data.rows} rows).`;
      })
      .catch(() => { status.textContent = "Upload failed: the server could not be reached."; });
  });

  // Stop waiting at once: the server cancels the stream or tool within 100 ms.
  cancel.addEventListener("click", () => {
    socket.send(JSON.stringify({ type: "cancel" }));
    busy(false);
  });
})();
