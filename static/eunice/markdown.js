// Answers as Markdown: marked parses, DOMPurify sanitises, highlight.js colours the code
// (all three served from static/vendor/). An answer is rendered a block at a time, so
// while it streams the blocks already finished keep their DOM nodes (a selection, a
// copied code block, a screen reader's place) and only the last block is redrawn.
(function () {
  "use strict";
  const SANITIZE = {
    USE_PROFILES: { html: true },
    // Markdown needs none of these; a model (or a page it read) could use them to fake the UI.
    FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "option"],
    FORBID_ATTR: ["style", "class", "id"],
    RETURN_DOM_FRAGMENT: true,
  };
  const COPIED_FOR_MS = 1500;

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // Copies with the Clipboard API where the page may (https, localhost), else the old way.
  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
    const area = el("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.className = "offscreen";
    document.body.appendChild(area);
    area.select();
    const ok = document.execCommand("copy");
    area.remove();
    return ok ? Promise.resolve() : Promise.reject(new Error("copy refused"));
  }

  // A button that copies what `text()` returns and says so for a moment.
  function copyButton(label, text) {
    const button = el("button", "copy", "Copy");
    button.type = "button";
    button.setAttribute("aria-label", label);
    button.addEventListener("click", () => {
      copyText(text())
        .then(() => { button.textContent = "Copied"; })
        .catch(() => { button.textContent = "Copy failed"; })
        .finally(() => setTimeout(() => { button.textContent = "Copy"; }, COPIED_FOR_MS));
    });
    return button;
  }

  // An image is shown only from this site: a remote one would be fetched on sight, and
  // its address can carry what the model read (a known way to leak a conversation).
  function sameSite(url) {
    try { return new URL(url, location.href).origin === location.origin; } catch (e) { return false; }
  }

  function decorate(fragment) {
    fragment.querySelectorAll("img").forEach((img) => {
      if (!sameSite(img.getAttribute("src") || "")) img.replaceWith(document.createTextNode(`[image: ${img.alt || "not shown"}]`));
    });
    fragment.querySelectorAll("a[href]").forEach((a) => {
      if (!sameSite(a.href)) { a.target = "_blank"; a.rel = "noopener noreferrer"; }
    });
    fragment.querySelectorAll("table").forEach((table) => {
      const scroll = el("div", "table-scroll");
      table.replaceWith(scroll);
      scroll.appendChild(table);
    });
    fragment.querySelectorAll("pre > code").forEach((code) => {
      // marked names the fence's language as class="language-x" (class is stripped above: put it back).
      const pre = code.parentNode;
      const language = pre.dataset.language;
      if (language && window.hljs && window.hljs.getLanguage(language)) {
        code.className = `language-${language}`;
        window.hljs.highlightElement(code);
      }
      const block = el("div", "code-block");
      pre.replaceWith(block);
      const bar = el("div", "code-bar", language || "");
      bar.appendChild(copyButton("Copy code", () => code.textContent));
      block.appendChild(bar);
      block.appendChild(pre);
    });
  }

  const escapeHtml = (text) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  const renderer = {
    // The fence's language survives sanitising as a data attribute (class attributes do not).
    code({ text, lang, escaped }) {
      const language = (lang || "").match(/^[\w+#.-]*/)[0].toLowerCase();
      return `<pre data-language="${language}"><code>${escaped ? text : escapeHtml(text)}</code></pre>`;
    },
    // HTML written in an answer is shown as written, never parsed: Markdown is the format.
    // (DOMPurify would remove what is dangerous, but the browser's parser reports each
    // inline handler it meets to the page's Content-Security-Policy before it can.)
    html({ text }) {
      return escapeHtml(text);
    },
  };
  if (window.marked) window.marked.use({ gfm: true, renderer });

  function renderBlock(token) {
    const fragment = window.DOMPurify.sanitize(window.marked.parser([token]), SANITIZE);
    // marked ends each block with a newline: as a text node it would only pad textContent.
    Array.from(fragment.childNodes).forEach((node) => { if (node.nodeType === Node.TEXT_NODE && !node.textContent.trim()) node.remove(); });
    decorate(fragment);  // before it joins the page, where an image would start loading
    const box = el("div", "md-block");
    box.appendChild(fragment);
    return box;
  }

  // Renders `text` into `target`, keeping the nodes of blocks that did not change.
  function render(target, text) {
    if (!window.marked || !window.DOMPurify) { target.textContent = text; return; }
    const blocks = window.marked.lexer(text).filter((token) => token.type !== "space");
    const kept = target.mdBlocks || (target.textContent = "", []);
    let same = 0;
    // The last block may still be growing: it is redrawn until a later one starts.
    while (same < kept.length && same < blocks.length - 1 && kept[same].raw === blocks[same].raw.trimEnd()) same += 1;
    kept.splice(same).forEach((block) => block.node.remove());
    blocks.slice(same).forEach((token) => kept.push({ raw: token.raw.trimEnd(), node: target.appendChild(renderBlock(token)) }));
    target.mdBlocks = kept;
    target.classList.add("markdown");
  }

  // Streams into `target`: text is added as it comes and drawn at most every FRAME_MS.
  const FRAME_MS = 40;
  function stream(target) {
    let text = "";
    let timer = null;
    const draw = () => { timer = null; render(target, text); };
    return {
      append(more) { text += more; if (timer === null) timer = setTimeout(draw, FRAME_MS); },
      finish() { if (timer !== null) clearTimeout(timer); draw(); return text; },
      text: () => text,
    };
  }

  window.EuniceMarkdown = { render, stream, copyButton };
})();
