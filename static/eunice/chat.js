// The chat page: one websocket per conversation; chunks render as they arrive.
(function () {
  "use strict";
  const messages = document.getElementById("messages");
  const conversationId = messages.dataset.conversation;
  const form = document.getElementById("composer");
  const prompt = document.getElementById("prompt");
  const send = document.getElementById("send");
  const cancel = document.getElementById("cancel");
  const panel = document.getElementById("panel");
  const settings = JSON.parse(document.getElementById("chat-settings").textContent || "{}");
  // Cards shown in the side panel only, and those shown in the conversation: a chart is
  // drawn once, in the conversation, and the panel keeps a link to it.
  const INLINE_CARDS = new Set(["file_download", "chart"]);
  const INLINE_ONLY = new Set(["chart"]);
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const socketUrl = `${scheme}://${location.host}/ws/conversations/${conversationId}/`;
  let socket = null;
  let answer = null;
  let running = false;  // an answer of this conversation is running (here or in another tab)
  let turn = { thinking: null, lastUser: "" };  // the turn being drawn: its thinking pane, its question
  let tools = {};
  let drawing = false;  // redrawing the stored conversation: no scrolling per message

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function busy(on) {
    running = on;
    send.disabled = on || !connected();
    cancel.disabled = !on || !connected();
  }

  function connected() {
    return socket !== null && socket.readyState === WebSocket.OPEN;
  }

  function bubble(role, text) {
    const box = el("div", `message ${role}`);
    box.appendChild(el("div", "text", text));
    messages.appendChild(box);
    if (!drawing) box.scrollIntoView({ block: "end" });
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

  // An answer stored whole (a reload): drawn at once, with its Copy button.
  function storedAnswer(text) {
    const box = bubble("assistant", "");
    window.EuniceMarkdown.render(box.querySelector(".text"), text);
    box.markdown = { finish: () => text };
    finishAnswer(box);
    return box;
  }

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
    } else if (card.type === "training_results") {
      drawTrainingResults(box, card);
    } else if (card.type === "model_recommendation") {
      drawRecommendation(box, card);
    } else if (card.type === "shap_explanation") {
      drawShap(box, card);
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
      // ast: Vega's expression interpreter, never Function() (the page's policy forbids eval)
      window.vegaEmbed(target, card.spec || card.vega_lite, { actions: false, renderer: "svg", ast: true })
        .catch((error) => target.replaceWith(el("pre", "error", `The chart could not be drawn: ${error.message}`)));
    } else if (card.type === "map_display" && window.L) {
      box.appendChild(drawMap(card));
    } else if (card.type === "classification_result") {
      box.appendChild(drawClassification(card));
    } else if (card.type === "extraction_result") {
      box.appendChild(drawExtraction(card));
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

  // What a classification or extraction read from: the document, and the saved taxonomy or schema.
  function insightHeading(card, definition) {
    const doc = card.document || {};
    const from = definition ? ` · ${definition.name} v${definition.version}` : "";
    return el("p", "insight-source", `${doc.title || "document"}${doc.id ? ` (document ${doc.id})` : ""}${from}`);
  }

  // Cited passages: their labels, each opening to the quoted text.
  function citationList(citations) {
    const list = el("ul", "citations");
    (citations || []).forEach((c) => {
      const item = el("li");
      const details = el("details");
      details.appendChild(el("summary", "", c.id));
      details.appendChild(el("blockquote", "", c.text || ""));
      item.appendChild(details);
      list.appendChild(item);
    });
    return list;
  }

  function drawClassification(card) {
    const holder = el("div", "insight");
    holder.appendChild(insightHeading(card, card.taxonomy));
    const list = el("ol", "labels");
    (card.labels || []).forEach((entry) => {
      const item = el("li", "label");
      const percent = Math.round(100 * Number(entry.confidence || 0));
      item.appendChild(el("strong", "", String(entry.label)));
      const meter = el("meter");
      meter.min = 0; meter.max = 100; meter.value = percent;
      meter.setAttribute("aria-label", `confidence ${percent}%`);
      item.appendChild(meter);
      item.appendChild(el("span", "confidence", `${percent}%`));
      if (entry.reason) item.appendChild(el("p", "reason", entry.reason));
      item.appendChild(citationList(entry.citations));
      list.appendChild(item);
    });
    holder.appendChild(list);
    return holder;
  }

  function drawExtraction(card) {
    const holder = el("div", "insight");
    holder.appendChild(insightHeading(card, card.schema));
    const table = el("table", "fields");
    const head = el("tr");
    ["field", "value", "passages"].forEach((c) => head.appendChild(el("th", "", c)));
    table.appendChild(head);
    (card.fields || []).forEach((field) => {
      const tr = el("tr");
      const value = field.value === null || field.value === undefined ? "—" : field.value;
      tr.appendChild(el("th", "", field.name));
      tr.appendChild(el("td", "", typeof value === "string" ? value : JSON.stringify(value)));
      const cited = el("td");
      cited.appendChild(citationList(field.citations));
      tr.appendChild(cited);
      table.appendChild(tr);
    });
    holder.appendChild(table);
    return holder;
  }

  // A small table of objects: one row each, the named keys as columns.
  function keyTable(items, columns, headings) {
    const table = el("table");
    const head = el("tr");
    (headings || columns).forEach((c) => head.appendChild(el("th", "", c)));
    table.appendChild(head);
    items.forEach((item) => {
      const tr = el("tr");
      columns.forEach((c) => tr.appendChild(el("td", "", String(item[c] ?? ""))));
      table.appendChild(tr);
    });
    return table;
  }

  function drawTrainingResults(box, card) {
    box.appendChild(el("h4", "", card.title || card.model || "model"));
    box.appendChild(el("p", "", `${card.algorithm} ${card.task} of ${card.target}, trained on ${card.trained_rows} rows of ${card.dataset}`));
    box.appendChild(keyTable(card.metrics || [], ["metric", "mean", "std"], ["cross-validated", "mean", "± sd"]));
    if (card.compared_on_rows && card.compared_on_rows < card.trained_rows) {
      box.appendChild(el("p", "muted", `Cross-validated on a sample of ${card.compared_on_rows} rows.`));
    }
    box.appendChild(el("p", "muted", `Features: ${(card.features || []).join(", ")}`));
    if ((card.classes || []).length) box.appendChild(el("p", "muted", `Classes: ${card.classes.join(", ")}`));
  }

  function drawRecommendation(box, card) {
    box.appendChild(el("h4", "", card.title || "Recommendation"));
    box.appendChild(el("p", "", card.reason || ""));
    const table = keyTable(card.candidates || [], ["algorithm", "score", "std"], ["algorithm", card.metric || "score", "± sd"]);
    table.querySelectorAll("tr").forEach((tr, i) => {
      if (i > 0 && card.candidates[i - 1].algorithm === card.recommended) tr.className = "recommended";
    });
    box.appendChild(table);
  }

  // One bar per column: its SHAP contribution (a row) or mean |SHAP| (overall), scaled to the largest.
  function drawShap(box, card) {
    box.appendChild(el("h4", "", card.title || "Explanation"));
    const items = card.contributions || [];
    const amount = (c) => (card.scope === "overall" ? c.importance : c.contribution) || 0;
    const largest = Math.max(1e-12, ...items.map((c) => Math.abs(amount(c))));
    if (card.scope !== "overall") {
      const predicted = typeof card.prediction === "number" ? card.prediction.toPrecision(4) : card.prediction;
      box.appendChild(el("p", "", `Prediction ${predicted}; ${card.output} starts at ${Number(card.base_value).toPrecision(4)} on average.`));
    } else {
      box.appendChild(el("p", "", `How much each column moves ${card.output} (mean |SHAP|).`));
    }
    const list = el("ul", "shap-bars");
    items.forEach((c) => {
      const value = amount(c);
      const item = el("li", value < 0 ? "shap-down" : "shap-up");
      const shown = typeof c.value === "number" ? Number(c.value.toPrecision(4)) : c.value ?? "—";
      const label = card.scope === "overall" ? c.feature : `${c.feature} = ${shown}`;
      item.appendChild(el("span", "shap-label", label));
      const bar = el("span", "shap-bar");
      bar.style.width = `${(100 * Math.abs(value)) / largest}%`;
      item.appendChild(bar);
      item.appendChild(el("span", "shap-value", (value > 0 && card.scope !== "overall" ? "+" : "") + Number(value).toPrecision(3)));
      list.appendChild(item);
    });
    box.appendChild(list);
  }

  // Maps draw on a world layer shipped with the page (Natural Earth's countries, 1:110m),
  // fetched once; with a tile server configured (EUNICE_MAP_TILES) its tiles lie under it.
  let world = null;
  function worldLayer() {
    if (!world) {
      world = fetch(settings.world, { credentials: "same-origin" })
        .then((r) => r.json())
        .then((topology) => window.topojson.feature(topology, topology.objects.countries))
        .catch(() => null);  // the data layers are drawn all the same
    }
    return world;
  }

  // A feature's label: the layer's label column (display_map's label_column), else a name it has.
  function featureLabel(feature, column) {
    const properties = (feature && feature.properties) || {};
    const value = column ? properties[column] : (properties.name ?? properties.label ?? properties.title);
    return value === undefined || value === null ? "" : String(value);
  }

  function drawMap(card) {
    const holder = el("div", "map");
    holder.setAttribute("role", "region");
    holder.setAttribute("aria-label", card.title ? `Map: ${card.title}` : "Map");
    setTimeout(() => {
      const map = window.L.map(holder, { attributionControl: Boolean(settings.tiles), worldCopyJump: true });
      const css = getComputedStyle(document.documentElement);
      const colour = (name) => css.getPropertyValue(name).trim();
      if (settings.tiles) {
        window.L.tileLayer(settings.tiles, { attribution: settings.tiles_attribution || "", maxZoom: 18 }).addTo(map);
        if (map.attributionControl) map.attributionControl.setPrefix(false);
      }
      map.createPane("basemap").style.zIndex = 250;  // under the data (overlayPane is 400)
      worldLayer().then((countries) => {
        if (!countries || settings.tiles) return;
        window.L.geoJSON(countries, {
          pane: "basemap", interactive: false,
          style: { color: colour("--map-border"), weight: 0.6, fillColor: colour("--map-land"), fillOpacity: 1 },
        }).addTo(map);
      });
      const labels = {};  // source id -> the label column a layer names for it
      (card.layers || []).forEach((layer) => { if (layer.source && layer.label) labels[layer.source] = layer.label; });
      const group = window.L.featureGroup().addTo(map);
      // An element, not a string: Leaflet puts a string tooltip in as HTML, and a
      // label can come from any data (a fetched page, an uploaded file).
      const tip = (layer, text) => { if (text) layer.bindTooltip(el("span", "", text)); };
      const style = { color: colour("--accent"), weight: 2, fillOpacity: 0.6 };
      const options = (column) => ({
        style,
        pointToLayer: (feature, latlng) => window.L.circleMarker(latlng, { ...style, radius: 5, weight: 1 }),
        onEachFeature: (feature, layer) => tip(layer, featureLabel(feature, column)),
      });
      (card.sources || []).forEach((source) => {
        if (source.type === "geojson" && source.data) window.L.geoJSON(source.data, options(labels[source.id])).addTo(group);
      });
      (card.layers || []).forEach((layer) => {
        if (layer.geojson) window.L.geoJSON(layer.geojson, options(layer.label)).addTo(group);
        (layer.points || []).forEach((p) => {
          const marker = window.L.circleMarker([p.lat, p.lon], { ...style, radius: 5, weight: 1 }).addTo(group);
          tip(marker, String(p.label ?? ""));
        });
      });
      if (card.bounds) map.fitBounds(card.bounds, { padding: [20, 20], maxZoom: 8 });
      else if (group.getLayers().length) map.fitBounds(group.getBounds(), { padding: [20, 20], maxZoom: 8 });
      else map.setView([20, 0], 1);
    });
    return holder;
  }

  // Shows cards in the panel, and INLINE_CARDS in the conversation under `where`. A chart
  // is drawn once, in the conversation: the panel keeps a link to it. Returns the nodes made.
  function showCards(cards, where) {
    const nodes = [];
    (cards || []).forEach((card) => {
      const inline = INLINE_CARDS.has(card.type) && where ? where.appendChild(renderCard(card)) : null;
      if (inline) nodes.push(inline);
      nodes.push(panel.appendChild(inline && INLINE_ONLY.has(card.type) ? cardLink(card, inline) : renderCard(card)));
    });
    return nodes;
  }

  function cardLink(card, target) {
    const box = el("div", `card card-link card-${card.type}-link`);
    box.appendChild(el("div", "card-type", card.type));
    const title = card.title || (card.spec && typeof card.spec.title === "string" && card.spec.title) || card.type;
    const button = box.appendChild(el("button", "link", `${title}: see it in the conversation`));
    button.type = "button";
    target.tabIndex = -1;
    button.addEventListener("click", () => { target.scrollIntoView({ block: "center" }); target.focus(); });
    return box;
  }

  // JSON with every object's keys sorted: the stored cards come back from the database in
  // its own key order (PostgreSQL's jsonb sorts them), which says nothing about their content.
  function canonical(value) {
    if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
    if (value && typeof value === "object") {
      return `{${Object.keys(value).sort().map((key) => `${JSON.stringify(key)}:${canonical(value[key])}`).join(",")}}`;
    }
    return JSON.stringify(value);
  }

  // Cards stream in as their tools finish; when the answer is done, the stored
  // answer's cards (merged, citations added) replace them if they differ.
  let live = { cards: [], nodes: [] };
  function settleCards(final, where) {
    final = (final || []).filter((card) => card.type !== "approval");  // drawn in the thread, not the panel
    if (canonical(final) === canonical(live.cards)) { live = { cards: [], nodes: [] }; return; }
    live.nodes.forEach((node) => node.remove());
    live = { cards: [], nodes: [] };
    showCards(final, where || (final.some((card) => INLINE_CARDS.has(card.type)) ? messages.appendChild(el("div", "message cards")) : null));
  }

  // A question from the model: its choices as buttons, and a box for any other answer.
  function ask(chunk) {
    const box = el("form", "question");
    box.dataset.question = chunk.question_id;
    box.setAttribute("aria-label", "Question from the assistant");
    box.appendChild(el("p", "", chunk.text));
    const status = el("p", "muted question-status");
    const reply = (text) => {
      if (!connected()) { status.textContent = "Not connected; the page reconnects, then try again."; return; }
      socket.send(JSON.stringify({ type: "answer", question_id: chunk.question_id, text }));
      box.replaceWith(el("p", "muted answered", `You answered: ${text}`));
    };
    const choices = Array.isArray(chunk.choices) ? chunk.choices.filter((c) => typeof c === "string" && c) : [];
    if (choices.length) {
      const row = box.appendChild(el("div", "choices"));
      choices.forEach((choice) => {
        const button = row.appendChild(el("button", "choice", choice));
        button.type = "button";
        button.addEventListener("click", () => reply(choice));
      });
    }
    const input = el("input");
    input.name = "answer";
    input.setAttribute("aria-label", choices.length ? "Or answer in your own words" : "Your answer");
    input.placeholder = choices.length ? "Or answer in your own words" : "Your answer";
    box.appendChild(input);
    box.appendChild(el("button", "", "Answer"));
    box.appendChild(status);
    box.addEventListener("submit", (event) => {
      event.preventDefault();
      if (input.value.trim()) reply(input.value.trim());
    });
    messages.appendChild(box);
    box.scrollIntoView({ block: "end" });
    (box.querySelector("button.choice") || input).focus({ preventScroll: true });
  }


  // An MCP server asks the person, never the model, for input while its tool runs: a form
  // built from its schema, or a link to open. Accept, Decline and Cancel go back over the socket.
  function elicit(chunk) {
    const box = el("form", "question elicitation");
    box.dataset.question = chunk.question_id;
    box.setAttribute("aria-label", `Request from the MCP server ${chunk.server}`);
    box.appendChild(el("p", "muted", `The MCP server “${chunk.server}” asks you:`));
    box.appendChild(el("p", "elicitation-message", chunk.message));
    const modes = { url: elicitUrl, sampling: elicitSampling };
    const read = (modes[chunk.mode] || ((b) => elicitForm(b, chunk.schema || {})))(box, chunk);
    const status = el("p", "muted question-status");
    const reply = (action) => {
      if (!connected()) { status.textContent = "Not connected; the page reconnects, then try again."; return; }
      const content = action === "accept" ? read() : undefined;
      socket.send(JSON.stringify({ type: "elicitation", question_id: chunk.question_id, action, content }));
      const said = { accept: "accepted", decline: "declined", cancel: "cancelled" }[action];
      box.replaceWith(el("p", "muted answered", `You ${said} the request of ${chunk.server}.`));
    };
    const row = box.appendChild(el("div", "choices"));
    row.appendChild(el("button", "", { url: "Done", sampling: "Approve" }[chunk.mode] || "Accept")).type = "submit";
    [["decline", "Decline"], ["cancel", "Cancel"]].forEach(([action, label]) => {
      const button = row.appendChild(el("button", "", label));
      button.type = "button";
      button.addEventListener("click", () => reply(action));
    });
    box.appendChild(status);
    box.addEventListener("submit", (event) => { event.preventDefault(); reply("accept"); });
    messages.appendChild(box);
    box.scrollIntoView({ block: "end" });
    (box.querySelector("input, select, a") || row.firstChild).focus({ preventScroll: true });
  }

  // URL mode: the person opens the page (only http(s)); nothing they type there passes through us.
  function elicitUrl(box, chunk) {
    const safe = /^https?:\/\//i.test(chunk.url || "");
    const line = box.appendChild(el("p"));
    if (safe) {
      const link = line.appendChild(el("a", "elicitation-url", chunk.url));
      link.href = chunk.url;
      link.target = "_blank";
      link.rel = "noopener noreferrer";
    } else line.textContent = "(the server sent no usable address)";
    return () => undefined;
  }

  // Sampling: exactly what the model would be sent for the server, to approve or not.
  function elicitSampling(box, chunk) {
    const list = box.appendChild(el("dl", "sampling-messages"));
    if (chunk.system) { list.appendChild(el("dt", "", "Instructions")); list.appendChild(el("dd", "", chunk.system)); }
    (chunk.messages || []).forEach((m) => {
      list.appendChild(el("dt", "", m.role === "user" ? "Message" : "Earlier answer"));
      list.appendChild(el("dd", "", m.text));
    });
    box.appendChild(el("p", "muted", `At most ${chunk.max_tokens} tokens; the cost is charged to this tool call.`));
    return () => undefined;
  }

  // Form mode: one field per property (text, number, yes/no, a choice), its title as label.
  function elicitForm(box, schema) {
    const required = new Set(Array.isArray(schema.required) ? schema.required : []);
    const fields = [];
    Object.entries(schema.properties || {}).forEach(([name, prop]) => {
      const label = box.appendChild(el("label", "elicitation-field", prop.title || name));
      const options = choicesOf(prop.type === "array" ? prop.items || {} : prop);
      let input;
      if (options.length) {
        input = el("select");
        input.multiple = prop.type === "array";
        options.forEach(([value, text]) => { const o = input.appendChild(el("option", "", text)); o.value = value; });
      } else {
        input = el("input");
        input.type = { boolean: "checkbox", integer: "number", number: "number" }[prop.type]
          || { email: "email", date: "date", uri: "url" }[prop.format] || "text";
        if (prop.type === "number") input.step = "any";
        if (prop.minimum !== undefined) input.min = prop.minimum;
        if (prop.maximum !== undefined) input.max = prop.maximum;
        if (prop.maxLength !== undefined) input.maxLength = prop.maxLength;
        if (prop.minLength !== undefined) input.minLength = prop.minLength;
      }
      input.name = name;
      if (required.has(name) && prop.type !== "boolean") input.required = true;
      if (prop.default !== undefined) {
        if (input.type === "checkbox") input.checked = !!prop.default; else input.value = prop.default;
      }
      label.appendChild(input);
      if (prop.description) label.appendChild(el("small", "muted", prop.description));
      fields.push([name, prop, input]);
    });
    return () => {
      const content = {};
      fields.forEach(([name, prop, input]) => {
        if (input.type === "checkbox") content[name] = input.checked;
        else if (input.multiple) content[name] = Array.from(input.selectedOptions, (o) => o.value);
        else if (input.value !== "") content[name] = input.value;
      });
      return content;
    };
  }

  function choicesOf(prop) {
    if (Array.isArray(prop.enum)) {
      const names = Array.isArray(prop.enumNames) ? prop.enumNames : prop.enum;
      return prop.enum.map((value, i) => [String(value), String(names[i] ?? value)]);
    }
    const alternatives = prop.oneOf || prop.anyOf;
    if (Array.isArray(alternatives)) return alternatives.filter((a) => a && a.const !== undefined).map((a) => [String(a.const), String(a.title || a.const)]);
    return [];
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
      if (!connected()) { status.textContent = "Not connected; the page reconnects, then try again."; return; }
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
        // A labelled task (a convene participant) is shown by its label, not its long brief.
        p.summary.textContent = chunk.label || `Helper ${chunk.subtask}: ${chunk.task}`;
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

  // A new turn: its own thinking pane, its own helpers' panes, its question for Retry.
  function newTurn(text) {
    turn = { thinking: null, lastUser: text };
    Object.keys(panes).forEach((id) => delete panes[id]);
    tools = {};
    answer = null;
  }

  function toolLine(chunk, replay) {
    const line = el("div", "tool running");
    const label = line.appendChild(el("span", "tool-label", `${chunk.status_message || "Running"} · ${chunk.name}…`));
    line.dataset.label = label.textContent;
    line.dataset.name = chunk.name;
    if (!replay) {
      // Cancels this call only: it returns Cancelled and the answer goes on with the others.
      const stop = line.appendChild(el("button", "tool-cancel", "Cancel"));
      stop.type = "button";
      stop.title = `Stop this ${chunk.name} call; the answer goes on without it`;
      stop.addEventListener("click", () => {
        stop.disabled = true;
        if (connected()) socket.send(JSON.stringify({ type: "cancel", tool_use_id: chunk.tool_use_id }));
      });
    }
    tools[chunk.tool_use_id] = line;
    messages.appendChild(line);
  }

  // What the result line says: done, failed, or (a hint) what to change; an unknown tool is named so.
  function resultLabel(chunk) {
    if (chunk.outcome === "error" || (chunk.outcome === undefined && chunk.error)) return ["failed", `${chunk.name} failed`];
    if (chunk.outcome === "hint") return ["hint", chunk.unknown ? `No tool is called ${chunk.name}` : `${chunk.name}: not run, see the hint`];
    return ["done", `${chunk.name} done`];
  }

  function toolResult(chunk) {
    const line = tools[chunk.tool_use_id] || el("div", "tool");
    const [kind, label] = resultLabel(chunk);
    line.className = `tool ${kind}`;
    line.textContent = "";
    const details = el("details");
    details.appendChild(el("summary", "", label));
    details.appendChild(el("pre", "", chunk.content));
    line.appendChild(details);
    if (!line.parentNode) messages.appendChild(line);
    if (answer) finishAnswer(answer);
    answer = null;  // text after a tool call starts a new bubble
    turn.thinking = null;  // and the next model call's thinking a new pane
  }

  // A model error: said as an error, with Retry (the turn's message sent again).
  function errorBubble(chunk) {
    const box = bubble("error", chunk.message);
    if (chunk.refused || chunk.subtask || !turn.lastUser) return box;
    const text = turn.lastUser;
    const retry = box.appendChild(el("button", "retry", "Retry"));
    retry.type = "button";
    retry.setAttribute("aria-label", "Retry: send the message again");
    retry.addEventListener("click", () => {
      if (running || !connected()) return;
      retry.remove();
      sendMessage(text);
    });
    return box;
  }

  // Tool calls the turn left without a result (it was cancelled or interrupted).
  function stopRunningTools() {
    Object.values(tools).forEach((line) => {
      if (!line.classList.contains("running")) return;
      line.className = "tool stopped";
      line.textContent = `${line.dataset.name}: stopped before it finished`;
    });
  }

  // One chunk of the conversation: live from the socket, or (`replay`) rebuilt from the
  // stored events on a reload or a reconnect (conversations/timeline.py), drawn alike.
  function handle(chunk, replay) {
    if (chunk.subtask && subtaskChunk(chunk)) return;
    switch (chunk.type) {
      case "user":
        bubble("user", chunk.text);
        newTurn(chunk.text);
        break;
      case "answer":  // stored without its events: the text and its cards
        showCards(chunk.cards, storedAnswer(chunk.text));
        break;
      case "running":  // a reload while the answer is still being written
        busy(true);
        break;
      case "text_delta":
        if (!answer) answer = startAnswer();
        answer.markdown.append(chunk.text);
        break;
      case "thinking": {
        // Each turn's thinking in its own pane, where it happened, closed until opened.
        if (!turn.thinking) {
          const pane = messages.appendChild(el("details", "thinking"));
          pane.appendChild(el("summary", "", "Thinking"));
          turn.thinking = pane.appendChild(el("pre"));
          if (answer) { finishAnswer(answer); answer = null; }
        }
        turn.thinking.textContent += chunk.text;
        break;
      }
      case "tool_call":
        toolLine(chunk, replay);
        break;
      case "progress": {
        const line = tools[chunk.tool_use_id];
        if (replay) break;
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
        if (chunk.card.type === "approval") { if (!replay) showApproval(chunk.card); break; }
        live.cards.push(chunk.card);
        let holder = null;  // inline cards get a place in the conversation, as after an answer
        if (INLINE_CARDS.has(chunk.card.type)) {
          holder = messages.appendChild(el("div", "message cards"));
          live.nodes.push(holder);
        }
        live.nodes.push(...showCards([chunk.card], holder));
        break;
      }
      case "tool_result":
        toolResult(chunk);
        break;
      case "question":
        ask(chunk);
        break;
      case "elicitation":  // drawn again only while it waits (conversations/timeline.py)
        elicit(chunk);
        break;
      case "question_settled": {  // answered in another tab, or given up: no longer offered
        const box = messages.querySelector(`form.question[data-question="${CSS.escape(chunk.question_id)}"]`);
        if (box) box.replaceWith(el("p", "muted answered", chunk.answered ? "Answered in another window." : "Not answered in time; the assistant went on without it."));
        break;
      }
      case "approval_decided":
        settleApproval(chunk.card);
        bubble("user", chunk.text);
        break;
      case "error":
        errorBubble(chunk);
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
        stopRunningTools();
        if (replay && !answer && chunk.text) answer = storedAnswer(chunk.text);
        else if (answer) finishAnswer(answer);
        const where = answer;  // inline cards go under this answer
        if (chunk.cancelled) bubble("notice", "Cancelled.");
        if (chunk.notice) bubble("notice", chunk.notice);  // cut off at the output limit, or refused
        answer = null;
        if (replay) { settleCards(chunk.cards ?? live.cards, where); break; }
        const resumed = resumedAnswer;
        resumedAnswer = null;
        fetch(`/api/conversations/${conversationId}/messages/?order=newest&limit=1`, { credentials: "same-origin" })
          .then((r) => r.json())
          .then((page) => {
            const last = page.results[0];
            // Reconnected while it was being written: the stored answer, whole, in its place.
            if (resumed && last && last.role === "assistant") window.EuniceMarkdown.render(resumed.querySelector(".text"), last.text);
            settleCards(last ? last.cards : [], where);
          });
        break;
      }
    }
  }

  // The conversation as stored: on a reload the page draws it from the chunks the server
  // put in the page; after a reconnect it asks for them again and draws them afresh.
  let resumedAnswer = null;
  function redraw(chunks) {
    messages.textContent = "";
    panel.textContent = "";
    live = { cards: [], nodes: [] };
    Object.keys(approvalBoxes).forEach((id) => delete approvalBoxes[id]);
    newTurn("");
    drawing = true;
    try { chunks.forEach((chunk) => handle(chunk, true)); } finally { drawing = false; }
    if (running && !answer) answer = startAnswer();  // the rest of the running answer streams in here
    resumedAnswer = running ? answer : null;
    messages.lastElementChild && messages.lastElementChild.scrollIntoView({ block: "end" });
  }
  redraw(JSON.parse(document.getElementById("timeline").textContent || "[]"));
  performance.mark("eunice-thread-drawn");  // bench/page.py measures to here
  JSON.parse(document.getElementById("pending-approvals").textContent || "[]").forEach(showApproval);

  // Sending waits for the connection: nothing typed is silently dropped. A dropped socket
  // is opened again (at once, then after 1, 2, 4… up to 10 s); once it is, the page draws
  // the conversation as stored and the running answer goes on streaming in.
  let retries = 0;
  let downNotice = null;
  function connect() {
    socket = new WebSocket(socketUrl);
    socket.addEventListener("message", (event) => handle(JSON.parse(event.data), false));
    socket.addEventListener("open", () => {
      send.title = "";
      const reconnected = retries > 0 || downNotice !== null;
      retries = 0;
      if (downNotice) { downNotice.remove(); downNotice = null; }
      // A page drawn idle, on its first connection, is up to date. Otherwise the answer
      // may have ended (or gone on) before this socket joined, and what it sent then went
      // only to the sockets that were there: the page is drawn again from what is stored.
      if (!reconnected && !running) { busy(false); return; }
      fetch(`/c/${conversationId}/timeline/`, { credentials: "same-origin", cache: "no-store" })
        .then((r) => r.json())
        .then((data) => {
          running = data.running;
          redraw(data.chunks);
          data.approvals.forEach(showApproval);  // still waiting for a click
          busy(running);
        })
        .catch(() => busy(running));
    });
    socket.addEventListener("close", (event) => {
      send.disabled = true;
      cancel.disabled = true;  // nothing to cancel on a closed socket
      if (event.code === 4401 || event.code === 4403 || event.code === 4404) {  // refused for good (signed out, no access)
        showDown("Disconnected; reload the page to sign in again.");
        return;
      }
      const wait = retries === 0 ? 0 : Math.min(10_000, 1000 * 2 ** (retries - 1));
      retries += 1;
      if (retries > 1) explainDown();
      setTimeout(connect, wait);
    });
  }

  function showDown(text) {
    if (!downNotice) downNotice = bubble("error", text);
    else downNotice.querySelector(".text").textContent = text;
    downNotice.classList.add("disconnected");
  }

  // Say what is down (/health/ names each dependency) rather than only "disconnected".
  function explainDown() {
    fetch("/health/", { credentials: "same-origin", cache: "no-store" })
      .then((r) => r.json())
      .then((health) => {
        const down = (health.down || []).map((name) => name.replace("_", " "));
        showDown(down.length
          ? `Disconnected: the server cannot reach its ${down.join(", ")}. Reconnecting…`
          : "Disconnected; reconnecting…");
      })
      .catch(() => showDown("Disconnected: the server is not answering. Reconnecting…"));
  }
  send.disabled = true;
  send.title = "Connecting…";
  connect();

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

  function sendMessage(text) {
    sent = { text, box: bubble("user", text) };
    newTurn(text);
    socket.send(JSON.stringify({ type: "message", text }));
    busy(true);
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = prompt.value.trim();
    if (!text) return;
    if (!connected()) {
      bubble("error", "Not connected yet; try again in a moment.");
      return;
    }
    sendMessage(text);
    prompt.value = "";
  });

  prompt.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); form.requestSubmit(); }
  });
  // Escape stops the running answer, from anywhere on the page but a question's box.
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && running && !event.target.closest(".question, .conversations")) cancel.click();
  });

  // MCP prompts as slash commands: typing "/" lists the prompts of the tenant's servers
  // (/server:prompt); choosing one asks for its arguments, and its messages go into the
  // composer for the person to read, change and send.
  // `asked` counts what the person did here (typed, chose, opened the resources): a list
  // that arrives after they moved on is dropped, never drawn over what they are filling in.
  const commands = { loading: null, box: null, asked: 0 };
  function csrf() { return document.querySelector("input[name=csrfmiddlewaretoken]").value; }
  function loadPrompts() {  // one request for the page, shared by every keystroke meanwhile
    if (!commands.loading) {
      commands.loading = fetch("/api/mcp/prompts/", { credentials: "same-origin" })
        .then((r) => (r.ok ? r.json() : { prompts: [] }))
        .then((data) => data.prompts || [])
        .catch(() => { commands.loading = null; return []; });  // asked again at the next "/"
    }
    return commands.loading;
  }
  function closeCommands() { if (commands.box) { commands.box.remove(); commands.box = null; } }
  function offerCommands() {
    const typed = prompt.value;
    const asked = ++commands.asked;
    if (!typed.startsWith("/") || /\s/.test(typed)) { closeCommands(); return; }
    loadPrompts().then((list) => {
      if (asked !== commands.asked) return;
      const matching = list.filter((p) => p.command.startsWith(typed) || p.name.startsWith(typed.slice(1)));
      closeCommands();
      if (!matching.length || prompt.value !== typed) return;
      const box = el("ul", "prompt-commands");
      box.setAttribute("aria-label", "Prompts of your MCP servers");
      matching.slice(0, 20).forEach((p) => {
        const item = box.appendChild(el("li"));
        const button = item.appendChild(el("button", "link prompt-command", p.command));
        button.type = "button";
        if (p.title || p.description) item.appendChild(el("small", "muted", ` ${p.title || ""}${p.title && p.description ? " — " : ""}${p.description || ""}`));
        button.addEventListener("click", () => choosePrompt(p));
      });
      form.after(box);
      commands.box = box;
    });
  }
  function choosePrompt(p) {
    commands.asked += 1;
    closeCommands();
    if (!p.arguments.length) { insertPrompt(p, {}, null); return; }
    const box = el("form", "prompt-arguments");
    box.setAttribute("aria-label", `Arguments of ${p.command}`);
    box.appendChild(el("p", "", `${p.command}${p.description ? ": " + p.description : ""}`));
    p.arguments.forEach((a) => {
      const label = box.appendChild(el("label", "elicitation-field", `${a.name}${a.required ? " (required)" : ""}`));
      const input = label.appendChild(el("input"));
      input.name = a.name;
      input.required = a.required;
      if (a.description) label.appendChild(el("small", "muted", a.description));
    });
    const status = el("p", "muted question-status");
    box.appendChild(el("button", "", "Insert")).type = "submit";
    const dismiss = box.appendChild(el("button", "", "Cancel"));
    dismiss.type = "button";
    dismiss.addEventListener("click", () => { box.remove(); commands.box = null; prompt.focus(); });
    box.appendChild(status);
    box.addEventListener("submit", (event) => {
      event.preventDefault();
      const values = {};
      box.querySelectorAll("input").forEach((input) => { if (input.value !== "") values[input.name] = input.value; });
      insertPrompt(p, values, status);
    });
    form.after(box);
    commands.box = box;
    box.querySelector("input").focus();
  }
  function insertPrompt(p, values, status) {
    fetch("/api/mcp/prompts/render/", {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf() },
      body: JSON.stringify({ server: p.server, name: p.name, arguments: values }),
    })
      .then((r) => r.json().then((data) => ({ ok: r.ok, data })))
      .then(({ ok, data }) => {
        if (!ok) {
          const said = data.detail || Object.values(data).flat().join("; ");
          if (status) status.textContent = `Not inserted: ${said}`; else bubble("error", `${p.command}: ${said}`);
          return;
        }
        const roles = new Set(data.messages.map((m) => m.role));
        prompt.value = data.messages.map((m) => (roles.size > 1 ? `${m.role === "user" ? "User" : "Assistant"}: ${m.text}` : m.text)).join("\n\n");
        closeCommands();
        prompt.focus();
      })
      .catch(() => { if (status) status.textContent = "Not inserted: the server could not be reached."; });
  }
  prompt.addEventListener("input", offerCommands);

  // A resource of the tenant's MCP servers attached to the message: listed, then read as
  // delimited text appended to the composer (the person sees and sends exactly that).
  document.getElementById("attach-resource").addEventListener("click", () => {
    const asked = ++commands.asked;
    closeCommands();
    fetch("/api/mcp/resources/", { credentials: "same-origin" })
      .then((r) => (r.ok ? r.json() : { resources: [] }))
      .then((data) => {
        if (asked !== commands.asked) return;
        closeCommands();
        const box = el("ul", "prompt-commands resource-list");
        box.setAttribute("aria-label", "Resources of your MCP servers");
        const resources = data.resources || [];
        if (!resources.length) box.appendChild(el("li", "muted", "Your MCP servers offer no resources."));
        resources.slice(0, 50).forEach((resource) => {
          const item = box.appendChild(el("li"));
          const button = item.appendChild(el("button", "link", resource.title || resource.name));
          button.type = "button";
          item.appendChild(el("small", "muted", ` ${resource.server}: ${resource.uri}`));
          button.addEventListener("click", () => attachResource(resource));
        });
        form.after(box);
        commands.box = box;
      });
  });
  function attachResource(resource) {
    fetch("/api/mcp/resources/attach/", {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf() },
      body: JSON.stringify({ server: resource.server, uri: resource.uri }),
    })
      .then((r) => r.json().then((data) => ({ ok: r.ok, data })))
      .then(({ ok, data }) => {
        closeCommands();
        if (!ok) { bubble("error", `Could not attach ${resource.uri}: ${data.detail || Object.values(data).flat().join("; ")}`); return; }
        prompt.value = prompt.value ? `${prompt.value}\n\n${data.text}` : data.text;
        prompt.focus();
      })
      .catch(() => bubble("error", `Could not attach ${resource.uri}: the server could not be reached.`));
  }

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
    if (connected()) socket.send(JSON.stringify({ type: "cancel" }));
    busy(false);
  });
})();
