// The console's custom-state editor: CodeMirror 6 with YAML highlighting over the page's
// <textarea id="source">. Validate sends the source to the controller's validate route (it compiles,
// never executes) and shows its error at the line and column the validator names. No inline script:
// the page loads this bundle; the CSRF token comes from <meta name="csrf-token">.
import { EditorView, basicSetup } from "codemirror";
import { EditorState } from "@codemirror/state";
import { yaml } from "@codemirror/lang-yaml";
import { lintGutter, setDiagnostics } from "@codemirror/lint";

function csrf() {
  const m = document.querySelector('meta[name="csrf-token"]');
  return m ? m.content : "";
}

// nonce is the style nonce of this page's Content-Security-Policy: the editor's generated style sheet
// carries it (the policy allows no other inline style).
function nonce() {
  const m = document.querySelector('meta[name="style-nonce"]');
  return m ? m.content : "";
}

function mount(area) {
  const readOnly = area.hasAttribute("readonly");
  const view = new EditorView({
    state: EditorState.create({
      doc: area.value,
      extensions: [basicSetup, yaml(), lintGutter(), EditorState.readOnly.of(readOnly), EditorView.cspNonce.of(nonce())],
    }),
  });
  area.style.display = "none";
  area.insertAdjacentElement("afterend", view.dom);
  view.dom.id = "editor";
  const sync = () => { area.value = view.state.doc.toString(); };
  if (area.form) area.form.addEventListener("submit", sync);
  return { view, sync };
}

function showResult(view, out, body) {
  const msg = document.getElementById("validate-result");
  if (body.valid) {
    view.dispatch(setDiagnostics(view.state, []));
    msg.className = "ok";
    msg.textContent = "valid: " + body.states + " state(s)";
    return;
  }
  const se = body.source_error;
  if (!se) {
    msg.className = "err";
    msg.textContent = body.error || "refused";
    return;
  }
  const doc = view.state.doc;
  const ln = Math.min(Math.max(se.line || 1, 1), doc.lines);
  const line = doc.line(ln);
  const from = Math.min(line.from + Math.max((se.column || 1) - 1, 0), line.to);
  view.dispatch(setDiagnostics(view.state, [{ from, to: Math.max(from, line.to), severity: "error", message: se.code + ": " + se.message }]));
  msg.className = "err";
  msg.dataset.line = String(se.line);
  msg.dataset.column = String(se.column);
  msg.textContent = "line " + se.line + ", column " + se.column + ": " + se.code + ": " + se.message;
}

document.addEventListener("DOMContentLoaded", () => {
  const area = document.getElementById("source");
  if (!area) return;
  const ed = mount(area);
  const btn = document.getElementById("validate");
  if (!btn) return;
  btn.addEventListener("click", async (ev) => {
    ev.preventDefault();
    ed.sync();
    const resp = await fetch(btn.dataset.action, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf() },
      body: JSON.stringify({ source: area.value }),
    });
    let body = {};
    try { body = await resp.json(); } catch (e) { body = { error: "HTTP " + resp.status }; }
    showResult(ed.view, resp, body);
  });
});
