// A form generated from the tool's input schema; it keeps the JSON textarea in step.
(function () {
  "use strict";
  const holder = document.getElementById("fields");
  const textarea = document.getElementById("inputs");
  const schema = JSON.parse(holder.dataset.schema || "{}");
  const properties = schema.properties || {};
  const required = new Set(schema.required || []);

  function current() {
    try { return JSON.parse(textarea.value || "{}"); } catch (e) { return {}; }
  }

  Object.entries(properties).forEach(([name, prop]) => {
    const label = document.createElement("label");
    label.textContent = name + (required.has(name) ? " *" : "") + (prop.description ? ` — ${prop.description}` : "");
    let input;
    if (Array.isArray(prop.enum)) {
      input = document.createElement("select");
      ["", ...prop.enum].forEach((v) => { const o = document.createElement("option"); o.value = v; o.textContent = v; input.appendChild(o); });
    } else if (prop.type === "boolean") {
      input = document.createElement("input");
      input.type = "checkbox";
    } else if (prop.type === "object" || prop.type === "array") {
      return;  // edited in the JSON box
    } else {
      input = document.createElement("input");
      input.type = prop.type === "integer" || prop.type === "number" ? "number" : "text";
    }
    input.name = `field-${name}`;
    input.dataset.field = name;
    input.addEventListener("change", () => {
      const value = current();
      if (input.type === "checkbox") value[name] = input.checked;
      else if (input.value === "") delete value[name];
      else if (prop.type === "integer") value[name] = parseInt(input.value, 10);
      else if (prop.type === "number") value[name] = parseFloat(input.value);
      else value[name] = input.value;
      textarea.value = JSON.stringify(value, null, 2);
    });
    label.appendChild(input);
    holder.appendChild(label);
  });
})();
