// agentbox audit viewer: read-only, no framework. Every value from a log
// is put into the page as text (textContent), never as markup.
"use strict";

const token = new URLSearchParams(location.search).get("token") || "";
const state = { files: [], file: 0, sessions: [], records: [], session: null, source: null, damaged: {} };

function api(path, params) {
  const q = new URLSearchParams(params || {});
  if (token) q.set("token", token);
  return fetch(path + "?" + q.toString()).then(r => {
    if (!r.ok) throw new Error(r.status + " " + r.statusText);
    return r.json();
  });
}

// diffOf shows the unified diff of a session's changes while its
// workspace copy still exists (copy mode, batch); nothing otherwise.
function diffOf(session) {
  const box = el("div", { class: "diff" });
  const q = new URLSearchParams({ session: session || "" });
  if (token) q.set("token", token);
  fetch("api/diff?" + q.toString()).then(r => r.ok ? r.text() : "").then(t => {
    if (t) box.replaceChildren(el("div", { class: "muted" }, "diff of the workspace copy (not applied yet)"), el("pre", { class: "mono" }, t));
  }).catch(() => {});
  return box;
}

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v);
  }
  for (const k of kids.flat(Infinity)) {
    if (k === null || k === undefined || k === false) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}

const badge = (text, kind) => el("span", { class: "badge b-" + kind }, text);
const fmtTime = t => t ? t.replace("T", " ").replace(/\.\d+Z$/, "").replace(/Z$/, "") : "";
const short = (s, n) => !s ? "" : s.length > n ? s.slice(0, n) + "…" : s;

function decisionBadge(d) {
  if (!d) return null;
  return badge(d.toUpperCase(), d === "allow" ? "ok" : d === "deny" ? "bad" : d === "ask" ? "ask" : "muted");
}

function statusBadge(s) {
  if (!s.ended) return badge("not ended", "ask");
  return badge(s.status || "ended", s.status === "ok" || s.status === "done" ? "ok" : "bad");
}

function verdictBadge(f) {
  if (f.error) return badge("unreadable", "bad");
  if (!f.intact) return badge("damaged", "bad");
  return badge("intact", "ok");
}

// ---- navigation

function route() {
  const h = location.hash.replace(/^#/, "") || "/";
  const m = h.match(/^\/f(\d+)(\/.*)?$/);
  let rest = h;
  if (m) { state.file = Math.min(+m[1], Math.max(0, state.files.length - 1)); rest = m[2] || "/"; }
  renderNav();
  const s = rest.match(/^\/s\/(.+)$/);
  if (rest === "/verify") return showVerify();
  if (rest === "/denials") return showDenials();
  if (s) return showSession(decodeURIComponent(s[1]));
  return showSessions();
}

function link(path) { return "#/f" + state.file + path; }

function renderNav() {
  const nav = document.getElementById("files");
  nav.replaceChildren(...state.files.map(f =>
    el("a", { href: "#/f" + f.index + "/", class: f.index === state.file ? "on" : "", title: f.path },
      f.path.split("/").pop(), verdictBadge(f))),
    el("a", { href: link("/denials"), id: "nav-denials" }, "denials"),
    el("a", { href: link("/verify"), id: "nav-verify" }, "verification"));
}

function setMain(...kids) { document.getElementById("main").replaceChildren(...kids.flat(Infinity)); }

// ---- sessions list

async function showSessions() {
  state.session = null;
  state.sessions = await api("api/sessions", { file: state.file });
  const f = state.files[state.file];
  const rows = state.sessions.map(s => el("tr", { class: "row", "data-session": s.id, onclick: () => { location.hash = link("/s/" + encodeURIComponent(s.id)); } },
    el("td", {}, statusBadge(s)),
    el("td", { class: "mono" }, short(s.id, 12)),
    el("td", {}, fmtTime(s.start)),
    el("td", { class: "wide" }, (s.user || "?") + "@" + (s.host || "?")),
    el("td", {}, short(s.task, 90), s.task_id ? el("div", { class: "muted" }, "batch task " + s.task_id) : null),
    el("td", { class: "wide" }, short(s.policy_path, 40), el("div", { class: "muted mono" }, short(s.policy_sha256, 12))),
    el("td", { class: "wide" }, s.model),
    el("td", { class: "num" }, s.calls),
    el("td", { class: "num" }, s.denials ? badge(s.denials, "bad") : "0"),
    el("td", { class: "num" }, s.alarms ? badge(s.alarms, "bad") : "0")));
  setMain(
    el("h1", {}, "Sessions ", el("span", { class: "muted" }, "· " + f.path)),
    el("table", { id: "sessions" },
      el("thead", {}, el("tr", {}, ["status", "session", "started (UTC)", "user@host", "task", "policy", "model", "calls", "denials", "alarms"].map(h =>
        el("th", { class: ["user@host", "policy", "model"].includes(h) ? "wide" : undefined }, h)))),
      el("tbody", {}, rows.length ? rows : el("tr", {}, el("td", { colspan: 10, class: "empty" }, "no sessions")))));
}

// ---- one session's timeline

function filtersBar() {
  const tools = [...new Set(state.records.map(l => l.rec.tool).filter(Boolean))].sort();
  const sel = (id, label, opts) => el("label", {}, label, el("select", { id, onchange: renderTimeline }, el("option", { value: "" }, "any"), opts.map(o => el("option", { value: o }, o))));
  const inp = (id, label, type, ph) => el("label", {}, label, el("input", { id, type, step: type === "datetime-local" ? "1" : undefined, placeholder: ph || "", oninput: renderTimeline }));
  return el("div", { class: "filters" },
    sel("f-decision", "decision", ["allow", "deny", "ask"]),
    sel("f-tool", "tool", tools),
    inp("f-since", "from (UTC)", "datetime-local"),
    inp("f-until", "to (UTC)", "datetime-local"),
    inp("f-text", "text", "search", "command, path, output…"),
    el("span", { class: "muted", id: "f-count" }));
}

function val(id) { const e = document.getElementById(id); return e ? e.value : ""; }

function matches(l, callDecision) {
  const r = l.rec;
  const d = val("f-decision"), tool = val("f-tool"), since = val("f-since"), until = val("f-until"), text = val("f-text").toLowerCase();
  const decision = r.decision || (r.call_id ? callDecision[r.call_id] : "");
  if (d && decision !== d && !(d === "ask" && r.event === "approval")) return false;
  if (tool && r.tool !== tool) return false;
  if (since && r.time.slice(0, since.length) < since) return false;
  if (until && r.time.slice(0, until.length) > until) return false;
  if (text && !JSON.stringify(r).toLowerCase().includes(text)) return false;
  return true;
}

function argsText(r) {
  const a = r.args || {};
  if (typeof a.command === "string") return a.command;
  if (typeof a.path === "string") return a.path + (typeof a.content === "string" ? "  (" + a.content.length + " bytes)" : "");
  return Object.keys(a).length ? JSON.stringify(a) : "";
}

function eventView(l, fresh) {
  const r = l.rec;
  let kind = r.event, body = [], cls = "ev";
  switch (r.event) {
    case "session_start":
      body.push(el("div", {}, "task: ", el("b", {}, r.task || "")),
        el("div", { class: "muted" }, [r.user && "user " + r.user, r.host && "host " + r.host, r.model && "model " + r.model, r.image && "image " + r.image, r.workspace && "workspace " + r.workspace + " (" + (r.workspace_mode || "") + ")", r.task_id && "batch task " + r.task_id].filter(Boolean).join(" · ")));
      break;
    case "model_call":
      kind = "model call";
      body.push(el("div", { class: "muted" }, "step " + (r.step || 0) + (r.total_tokens ? " · " + r.total_tokens + " tokens" : "") + (r.duration_ms !== undefined ? " · " + r.duration_ms + " ms" : "") + (r.finish_reason ? " · " + r.finish_reason : "")));
      if (r.plan) body.push(el("div", {}, "plan:", el("ol", {}, r.plan.map(p => el("li", {}, p)))));
      if (r.text) body.push(el("pre", {}, r.text));
      break;
    case "tool_call":
      if (r.phase === "result") {
        kind = "result";
        const failed = (r.exit_code !== undefined && r.exit_code !== 0) || r.timed_out || r.error;
        body.push(el("div", {}, el("b", {}, r.tool), " ",
          r.exit_code !== undefined ? badge("exit " + r.exit_code, r.exit_code === 0 ? "ok" : "bad") : null, " ",
          r.timed_out ? badge("timed out", "bad") : null, " ",
          el("span", { class: "muted" }, [r.duration_ms !== undefined && r.duration_ms + " ms", r.output_bytes !== undefined && r.output_bytes + " B out", r.truncated && "truncated"].filter(Boolean).join(" · "))));
        if (r.error) body.push(el("div", { class: "b-bad" }, r.error));
        if (r.output_preview) body.push(el("pre", {}, r.output_preview));
        if (failed) cls += " deny";
      } else {
        kind = "tool call";
        body.push(el("div", {}, el("b", {}, r.tool), " ", decisionBadge(r.decision), " ", el("span", { class: "mono" }, r.rule || ""), r.decided_by && r.decided_by !== "policy" ? el("span", { class: "muted" }, " by " + r.decided_by) : null),
          el("pre", {}, argsText(r)));
        if (r.reason) body.push(el("div", { class: "muted" }, r.reason));
        if (r.decision === "deny") cls += " deny";
      }
      break;
    case "approval":
      cls += " ask";
      body.push(el("div", {}, el("b", {}, r.tool || ""), " ", decisionBadge(r.decision), " ", el("span", { class: "muted" }, "approver " + (r.approver || "?") + (r.decided_by ? " (" + r.decided_by + ")" : "") + (r.scope ? " · scope " + r.scope : "")), r.reason ? " · " + r.reason : ""));
      if (r.prompt) body.push(el("pre", {}, r.prompt));
      break;
    case "net":
      kind = "network";
      if (r.decision === "deny") cls += " deny";
      body.push(el("div", {}, el("b", { class: "mono" }, (r.net_host || "?") + (r.net_port ? ":" + r.net_port : "")), " ", decisionBadge(r.decision), " ", el("span", { class: "mono" }, r.rule || ""),
        el("span", { class: "muted" }, [r.net_addr && " " + r.net_addr, r.bytes_up !== undefined && " ↑" + r.bytes_up + " B", r.bytes_down !== undefined && " ↓" + r.bytes_down + " B"].filter(Boolean).join(""))));
      break;
    case "alarm":
      cls += " deny";
      body.push(el("div", {}, badge("ALARM", "bad"), " ", r.what && !r.path ? badge(r.what, "bad") : null, " ", r.reason || r.error || "",
        r.path ? el("span", { class: "mono" }, r.path + ": " + (r.what || "") + (r.action ? ", " + r.action : "")) : "",
        " ", el("span", { class: "mono" }, r.rule || "")));
      if (r.argv) body.push(el("div", { class: "mono" }, "argv: " + r.argv.join(" ")));
      if (r.parents) body.push(el("div", { class: "muted mono" }, "parents: " + r.parents.join(" ← ")));
      if (r.secret || r.net_host) body.push(el("div", { class: "mono" }, [r.secret && "secret " + r.secret, r.net_method, r.net_host, r.net_path].filter(Boolean).join(" ")));
      break;
    case "exec_denied":
      kind = "denied at exec";
      cls += " deny";
      body.push(el("div", {}, badge(r.decision || "deny", "bad"), " ", el("span", { class: "mono" }, (r.argv || []).join(" ")),
        " ", el("span", { class: "muted" }, "pid " + (r.pid || "?")), " ", el("span", { class: "mono" }, r.rule || ""), r.reason ? " — " + r.reason : ""));
      break;
    case "session_end":
      kind = "session end";
      body.push(el("div", {}, statusBadge({ ended: true, status: r.status }), " ", el("span", { class: "muted" }, (r.steps || 0) + " steps")));
      if (r.answer) body.push(el("pre", {}, r.answer));
      if (r.files && r.files.length) body.push(el("table", { class: "files" },
        el("tr", {}, ["change", "path", "bytes", "sha256"].map(h => el("th", {}, h))),
        r.files.map(f => el("tr", {}, el("td", {}, badge(f.change, f.change === "deleted" ? "bad" : f.change === "added" ? "ok" : "info")), el("td", { class: "mono" }, f.path), el("td", { class: "num" }, f.bytes), el("td", { class: "mono muted" }, short(f.sha256, 16))))));
      if (r.files && r.files.length) body.push(diffOf(r.session));
      break;
    case "error":
      cls += " deny";
      body.push(el("div", {}, badge("error", "bad"), " ", r.error || ""));
      break;
  }
  if (r.error && r.event !== "error" && r.phase !== "result") body.push(el("div", { class: "b-bad" }, "error: " + r.error));
  if (fresh) cls += " new";
  const dmg = state.damaged[l.line];
  if (dmg) cls += " damaged";
  return el("div", { class: cls, "data-line": l.line, "data-event": r.event },
    el("div", { class: "t" }, fmtTime(r.time), el("div", {}, "line " + l.line),
      dmg ? el("div", { class: "dmg", title: dmg.detail }, badge("DAMAGED: " + dmg.kind, "bad")) : null),
    el("div", { class: "k" }, kind), el("div", { class: "body" }, body));
}

function renderTimeline(_, freshLine) {
  const callDecision = {};
  for (const l of state.records) if (l.rec.call_id && l.rec.decision && l.rec.phase !== "result") callDecision[l.rec.call_id] = l.rec.decision;
  const shown = state.records.filter(l => matches(l, callDecision));
  const tl = document.getElementById("timeline");
  if (!tl) return;
  tl.replaceChildren(...(shown.length ? shown.map(l => eventView(l, l.line === freshLine)) : [el("div", { class: "empty" }, "no records match")]));
  document.getElementById("f-count").textContent = shown.length + " of " + state.records.length + " records";
}

// loadDamage fetches the verdicts and maps each damaged line (and each line
// of a damaged run) of the current file to its damage.
async function loadDamage() {
  state.files = await api("api/files");
  state.damaged = {};
  const f = state.files[state.file];
  for (const d of (f && f.damage) || []) {
    for (let n = d.line; n <= (d.through || d.line); n++) state.damaged[n] = d;
  }
}

async function showSession(id) {
  state.session = id;
  await loadDamage();
  state.records = await api("api/records", { file: state.file, session: id });
  const start = state.records.find(l => l.rec.event === "session_start");
  const r = start ? start.rec : {};
  const end = state.records.find(l => l.rec.event === "session_end");
  const meta = [["session", id], ["status", end ? end.rec.status : "not ended"], ["user@host", (r.user || "?") + "@" + (r.host || "?")],
    ["task", r.task], ["batch task", r.task_id], ["policy", (r.policy_path || "") + "  sha256 " + (r.policy_sha256 || "")], ["model", r.model],
    ["image", r.image], ["container", r.container_id], ["workspace", r.workspace && r.workspace + " (" + r.workspace_mode + ")"], ["agentbox", r.version]]
    .filter(([, v]) => v);
  setMain(
    el("p", {}, el("a", { href: link("/") }, "← sessions")),
    el("h1", {}, "Session ", el("span", { class: "mono" }, short(id, 24))),
    el("div", { class: "card" }, el("dl", { class: "meta" }, meta.map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]))),
    filtersBar(),
    el("div", { class: "timeline", id: "timeline" }));
  renderTimeline();
}

// ---- verification verdicts

async function showVerify() {
  state.session = null;
  state.files = await api("api/files");
  renderNav();
  setMain(el("h1", {}, "Verification"), state.files.map(f => {
    const keyed = f.key_used ? badge("keyed · MACs checked", "ok") : f.keyed ? badge("keyed · no key given: MACs not checked", "ask") : badge("not keyed", "muted");
    const card = el("div", { class: "card verdict-card", "data-file": f.index },
      el("div", { class: "verdict" }, el("span", { class: "big" }, f.path), verdictBadge(f), keyed),
      el("p", { class: "muted" }, f.error ? f.error : f.records + " records · " + f.sessions + " sessions · head " + (f.head || "none")));
    if (!f.intact && f.damage.length) {
      card.append(el("h2", {}, (f.damage_count === 1 ? "1 damaged line" : f.damage_count + " problems")),
        el("table", { class: "damage" }, el("tr", {}, ["line", "kind", "detail"].map(h => el("th", {}, h))),
          f.damage.map(d => el("tr", {}, el("td", {}, d.through ? d.line + "–" + d.through : d.line), el("td", {}, badge(d.kind, "bad")), el("td", {}, d.detail)))));
    }
    if (f.unended && f.unended.length) card.append(el("p", {}, "sessions that never ended: ", el("span", { class: "mono" }, f.unended.join(", "))));
    if (f.checkpoint) card.append(el("p", { class: "checkpoint" }, badge(f.checkpoint_ok ? "checkpoint ✓" : "checkpoint ✗", f.checkpoint_ok ? "ok" : "bad"), " ", f.checkpoint));
    if (f.unproven) card.append(el("p", { class: "muted" }, "Not proven: " + f.unproven));
    return card;
  }));
}

// ---- denials across sessions

// denialKind says what a record denied, or "" when it denies nothing: a
// tool call refused up front, a program stopped at exec time, an egress
// attempt refused, an approval refused.
function denialKind(r) {
  if (r.event === "exec_denied") return "exec";
  if (r.decision !== "deny") return "";
  if (r.event === "tool_call") return "call";
  if (r.event === "net") return "network";
  if (r.event === "approval") return "approval";
  return "";
}

function denialWhat(r) {
  if (r.event === "exec_denied") return (r.argv || []).join(" ");
  if (r.event === "net") return (r.net_host || "?") + (r.net_port ? ":" + r.net_port : "");
  return (r.tool || "") + " " + (argsText(r) || (r.argv || []).join(" ") || r.prompt || "");
}

async function showDenials() {
  state.session = null;
  await loadDamage();
  const all = (await api("api/records", { file: state.file })).filter(l => denialKind(l.rec));
  const sel = (id, label, opts) => el("label", {}, label, el("select", { id, onchange: render }, el("option", { value: "" }, "any"), opts.map(o => el("option", { value: o }, o))));
  const inp = (id, label, ph) => el("label", {}, label, el("input", { id, type: "search", placeholder: ph, oninput: render }));
  const rules = [...new Set(all.map(l => l.rec.rule).filter(Boolean))].sort();
  const body = el("tbody", {});
  const counter = el("span", { class: "muted", id: "d-count" });
  function render() {
    const kind = val("d-kind"), rule = val("d-rule"), sess = val("d-session").toLowerCase(), text = val("d-text").toLowerCase();
    const shown = all.filter(l => (!kind || denialKind(l.rec) === kind) && (!rule || l.rec.rule === rule) &&
      (!sess || l.rec.session.toLowerCase().startsWith(sess)) && (!text || JSON.stringify(l.rec).toLowerCase().includes(text)));
    body.replaceChildren(...(shown.length ? shown.map(l => {
      const r = l.rec, dmg = state.damaged[l.line];
      return el("tr", { class: "row denial-row" + (dmg ? " damaged" : ""), "data-line": l.line, onclick: () => { location.hash = link("/s/" + encodeURIComponent(r.session)); } },
        el("td", {}, fmtTime(r.time)), el("td", { class: "mono" }, short(r.session, 12)), el("td", {}, badge(denialKind(r), "bad")),
        el("td", { class: "mono" }, short(denialWhat(r), 120)), el("td", { class: "mono" }, r.rule || ""), el("td", {}, r.reason || r.decided_by || ""),
        el("td", { class: "num" }, l.line, dmg ? el("div", {}, badge("DAMAGED: " + dmg.kind, "bad")) : null));
    }) : [el("tr", {}, el("td", { colspan: 7, class: "empty" }, "no denials match"))]));
    counter.textContent = shown.length + " of " + all.length + " denials";
  }
  setMain(el("h1", {}, "Denials ", el("span", { class: "muted" }, "· all sessions")),
    el("div", { class: "filters" }, sel("d-kind", "kind", ["call", "exec", "network", "approval"]), sel("d-rule", "rule", rules),
      inp("d-session", "session", "id or prefix"), inp("d-text", "text", "command, host, reason…"), counter),
    el("div", { class: "scroll" }, el("table", { id: "denials" },
      el("thead", {}, el("tr", {}, ["time (UTC)", "session", "kind", "what", "rule", "reason", "line"].map(h => el("th", {}, h)))), body)));
  render();
}

// ---- live follow

function follow() {
  if (state.source) { state.source.close(); state.source = null; }
  if (!document.getElementById("live").checked) return;
  const q = new URLSearchParams({ file: state.file });
  if (token) q.set("token", token);
  const src = new EventSource("api/events?" + q.toString());
  src.addEventListener("record", ev => {
    const l = JSON.parse(ev.data);
    if (state.session !== null) {
      if (l.rec.session === state.session) { state.records.push(l); renderTimeline(null, l.line); }
    } else if (document.getElementById("sessions")) {
      showSessions();
    }
  });
  state.source = src;
}

async function start() {
  state.files = await api("api/files");
  document.getElementById("live").addEventListener("change", follow);
  window.addEventListener("hashchange", () => { const f = state.file; route().then(() => { if (f !== state.file) follow(); }); });
  await route();
  follow();
  document.body.setAttribute("data-ready", "1");
}

start().catch(e => setMain(el("div", { class: "card b-bad" }, "error: " + e.message)));
