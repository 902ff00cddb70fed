// The admin pages' only script (the Content-Security-Policy allows no other): the toggles write
// `enabled` into the JSON editor, Save posts the editor with the session's CSRF token. Text from
// the server is only ever set with textContent.
"use strict";

function csrf() {
  const m = document.querySelector('meta[name="csrf-token"]');
  return m ? m.getAttribute("content") : "";
}

function show(result, ok, lines) {
  result.replaceChildren();
  result.className = ok ? "ok" : "error";
  if (ok) {
    result.textContent = lines[0];
    return;
  }
  const ul = document.createElement("ul");
  for (const line of lines) {
    const li = document.createElement("li");
    li.textContent = line;
    ul.appendChild(li);
  }
  result.appendChild(ul);
}

async function post(url, body, extra) {
  const r = await fetch(url, {
    method: "POST",
    credentials: "same-origin",
    headers: Object.assign({ "Content-Type": "application/json", "X-CSRF-Token": csrf() }, extra || {}),
    body,
  });
  let data = {};
  try { data = await r.json(); } catch (e) { data = { errors: ["HTTP " + r.status] }; }
  return { ok: r.ok, data };
}

function pluginsPage() {
  const editor = document.getElementById("config");
  const save = document.getElementById("save");
  if (!editor || !save) return;
  const result = document.getElementById("result");
  const dirty = document.getElementById("dirty");
  editor.addEventListener("input", () => { dirty.textContent = "unsaved changes"; });
  for (const box of document.querySelectorAll("input.toggle")) {
    box.addEventListener("change", () => {
      let config;
      try { config = JSON.parse(editor.value); } catch (e) {
        show(result, false, ["The editor does not hold valid JSON: " + e.message]);
        box.checked = !box.checked;
        return;
      }
      const list = box.dataset.list === "servers" ? (config.mcp || {}).servers : config.hooks;
      const entry = list && list[Number(box.dataset.index)];
      if (!entry) return;
      entry.enabled = box.checked;
      editor.value = JSON.stringify(config, null, 2);
      box.parentElement.querySelector("span.enabled").textContent = (box.checked ? "enabled" : "disabled") + " (unsaved)";
      dirty.textContent = "unsaved changes";
    });
  }
  save.addEventListener("click", async () => {
    save.disabled = true;
    try {
      const { ok, data } = await post("/agent-plugins/save", editor.value, {
        "X-Config-Version": editor.dataset.version || "",
      });
      if (ok) {
        show(result, true, ["Saved: " + data.servers + " MCP servers, " + data.hooks + " hooks."]);
        window.location.reload();
      } else {
        show(result, false, data.errors || ["refused"]);
      }
    } finally {
      save.disabled = false;
    }
  });
}

function settingsPage() {
  const form = document.getElementById("settings-form");
  if (!form) return;
  const result = document.getElementById("result");
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const model = {};
    const name = form.elements.name.value.trim();
    const win = form.elements.context_window.value.trim();
    if (name) model.name = name;
    if (win) model.context_window = Number(win);
    const body = { model };
    const provider = form.elements.default_provider.value.trim();
    body.default_provider = provider ? provider : null;
    const { ok, data } = await post("/settings/save", JSON.stringify(body));
    show(result, ok, ok ? ["Saved."] : (data.errors || ["refused"]));
  });
}

document.addEventListener("DOMContentLoaded", () => { pluginsPage(); settingsPage(); });
