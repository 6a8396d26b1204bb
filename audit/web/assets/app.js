// agentbox audit viewer: read-only, no framework. Every value from a log
// is put into the page as text (textContent), never as markup.
"use strict";

const params = new URLSearchParams(location.search);
const token = params.get("token") || "";
// ?live=0 is a static page: no live connection, so a headless browser
// finishes loading and can take a screenshot.
const live = params.get("live") !== "0";
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
const plural = (n, what) => n + " " + what + (n === 1 ? "" : "s");

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
  if (f.checkpoint && !f.checkpoint_ok) return badge("checkpoint failed", "bad");
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
    sel("f-kind", "kind", kinds),
    sel("f-decision", "decision", ["allow", "deny", "ask"]),
    sel("f-tool", "tool", tools),
    inp("f-since", "from (UTC)", "datetime-local"),
    inp("f-until", "to (UTC)", "datetime-local"),
    inp("f-text", "text", "search", "command, path, output…"),
    el("span", { class: "muted", id: "f-count" }));
}

function val(id) { const e = document.getElementById(id); return e ? e.value : ""; }

// kindOf is a record's kind: the timeline's label and kind filter.
function kindOf(r) {
  switch (r.event) {
    case "session_start": return "session start";
    case "session_end": return "session end";
    case "model_call": return "model call";
    case "tool_call": return r.phase === "result" ? "result" : "tool call";
    case "net": return "network";
    case "exec_denied": return "denied at exec";
    case "alarm": return r.action === "held" ? "held" : "alarm";
  }
  return r.event;
}

const kinds = ["session start", "model call", "tool call", "approval", "result", "changes", "held", "network", "alarm", "denied at exec", "session end", "error"];

const callKey = (r, pid) => r.session + "\n" + (r.call_id || "") + "\n" + (pid || "");

// fold pairs records with the row they belong to, so one call is one row:
// an approval goes into the call it answered (the call's decision, or the
// exec it stopped: same session, call and pid), a held change into its
// call's changes record (before or after it: a bulk call's decided holds
// are recorded before its copies finish). It returns each row's approval
// answer and held changes (by line) and the lines folded away.
function fold(lines) {
  const asked = {}, changes = {}, out = { answer: {}, held: {}, folded: new Set() };
  for (const l of lines) {
    if (l.rec.event === "changes" && l.rec.call_id && changes[callKey(l.rec)] === undefined) changes[callKey(l.rec)] = l.line;
  }
  for (const l of lines) {
    const r = l.rec;
    if (r.event === "approval" && r.call_id) {
      asked[callKey(r, r.pid)] = l;
    } else if ((r.event === "tool_call" && r.phase !== "result") || r.event === "exec_denied") {
      const k = callKey(r, r.event === "exec_denied" ? r.pid : "");
      const a = asked[k];
      if (a) { out.answer[l.line] = a.rec; out.folded.add(a.line); delete asked[k]; }
    } else if (r.event === "alarm" && r.action === "held" && changes[callKey(r)] !== undefined) {
      const n = changes[callKey(r)];
      (out.held[n] = out.held[n] || []).push(r);
      out.folded.add(l.line);
    }
  }
  return out;
}

function matches(l, callDecision, f) {
  const r = l.rec, ans = f.answer[l.line], held = f.held[l.line];
  const k = val("f-kind"), d = val("f-decision"), tool = val("f-tool"), since = val("f-since"), until = val("f-until"), text = val("f-text").toLowerCase();
  if (k && kindOf(r) !== k && !(k === "approval" && ans) && !(k === "held" && held)) return false;
  const decision = r.decision || (r.call_id ? callDecision[r.call_id] : "");
  if (d && decision !== d && !(d === "ask" && (r.event === "approval" || ans))) return false;
  if (tool && r.tool !== tool) return false;
  if (since && r.time.slice(0, since.length) < since) return false;
  if (until && r.time.slice(0, until.length) > until) return false;
  if (text && !JSON.stringify([r, ans, held]).toLowerCase().includes(text)) return false;
  return true;
}

function argsText(r) {
  const a = r.args || {};
  if (typeof a.command === "string") return a.command;
  if (typeof a.path === "string") return a.path + (typeof a.content === "string" ? "  (" + a.content.length + " bytes)" : "");
  return Object.keys(a).length ? JSON.stringify(a) : "";
}

// approvalView is an approval's answer: who answered what, and the prompt.
function approvalView(r, label) {
  return [el("div", {}, label ? el("span", { class: "muted" }, label + " ") : null, el("b", {}, r.tool || ""), " ", decisionBadge(r.decision), " ",
    el("span", { class: "muted" }, "approver " + (r.approver || "?") + (r.decided_by ? " (" + r.decided_by + ")" : "") + (r.scope ? " · scope " + r.scope : "")),
    r.reason ? el("div", { class: "muted" }, r.reason) : null),
  r.prompt ? el("pre", {}, r.prompt) : null];
}

// filesTable lists changed files (kind, path, size, sha256) and the held
// ones, each with its hazard and why.
function filesTable(files, held) {
  const kindBadge = c => badge(c, c === "deleted" ? "bad" : c === "added" ? "ok" : "info");
  return el("table", { class: "files" },
    el("tr", {}, ["change", "path", "bytes", "sha256"].map(h => el("th", {}, h))),
    files.map(f => el("tr", {}, el("td", {}, kindBadge(f.change)), el("td", { class: "mono" }, f.path), el("td", { class: "num" }, f.sha256 || f.bytes ? f.bytes : ""),
      el("td", { class: "mono muted", title: f.sha256 || f.sha256_before || "" }, short(f.sha256, 16), f.sha256_before ? el("div", {}, "was " + short(f.sha256_before, 16)) : null))),
    (held || []).map(h => el("tr", { class: "held" }, el("td", {}, badge("held", "bad"), " ", kindBadge((h.what || "").replace(/^held ?/, "") || "changed")),
      el("td", {}, el("div", { class: "mono" }, h.path || ""), el("div", {}, badge(h.rule || "held", "bad"), " ", el("span", { class: "muted" }, h.reason || ""))),
      el("td", { class: "num muted" }, "—"), el("td", { class: "muted" }, "not promoted"))));
}

function eventView(l, fresh, f) {
  const r = l.rec, ans = f && f.answer[l.line], held = f && f.held[l.line];
  let kind = kindOf(r), body = [], cls = "ev";
  switch (r.event) {
    case "session_start":
      body.push(el("div", {}, "task: ", el("b", {}, r.task || "")),
        el("div", { class: "muted" }, [r.user && "user " + r.user, r.host && "host " + r.host, r.model && "model " + r.model, r.image && "image " + r.image, r.workspace && "workspace " + r.workspace + " (" + (r.workspace_mode || "") + ")", r.task_id && "batch task " + r.task_id].filter(Boolean).join(" · ")));
      break;
    case "model_call":
      body.push(el("div", { class: "muted" }, "step " + (r.step || 0) + (r.total_tokens ? " · " + r.total_tokens + " tokens" : "") + (r.duration_ms !== undefined ? " · " + r.duration_ms + " ms" : "") + (r.finish_reason ? " · " + r.finish_reason : "")));
      if (r.plan) body.push(el("div", {}, "plan:", el("ol", {}, r.plan.map(p => el("li", {}, p)))));
      if (r.text) body.push(el("pre", {}, r.text));
      break;
    case "tool_call":
      if (r.phase === "result") {
        const failed = (r.exit_code !== undefined && r.exit_code !== 0) || r.timed_out || r.error;
        body.push(el("div", {}, el("b", {}, r.tool), " ",
          r.exit_code !== undefined ? badge("exit " + r.exit_code, r.exit_code === 0 ? "ok" : "bad") : null, " ",
          r.timed_out ? badge("timed out", "bad") : null, " ",
          el("span", { class: "muted" }, [r.duration_ms !== undefined && r.duration_ms + " ms", r.output_bytes !== undefined && r.output_bytes + " B out", r.truncated && "truncated"].filter(Boolean).join(" · "))));
        if (r.error) body.push(el("div", { class: "b-bad" }, r.error));
        if (r.output_preview) body.push(el("pre", {}, r.output_preview));
        if (failed) cls += " deny";
      } else {
        body.push(el("div", {}, el("b", {}, r.tool), " ", decisionBadge(r.decision), " ", el("span", { class: "mono" }, r.rule || ""), r.decided_by && r.decided_by !== "policy" ? el("span", { class: "muted" }, " by " + r.decided_by) : null),
          el("pre", {}, argsText(r)));
        if (r.reason) body.push(el("div", { class: "muted" }, r.reason));
        if (ans) body.push(approvalView(ans, "asked:"));
        if (r.decision === "deny") cls += " deny";
      }
      break;
    case "approval":
      cls += " ask";
      body.push(approvalView(r), r.argv ? el("div", { class: "mono" }, "argv: " + r.argv.join(" ")) : null);
      break;
    case "changes":
      body.push(el("div", {}, r.tool ? [el("b", {}, r.tool), " "] : null, el("span", { class: "muted" },
        [r.reason, r.files && plural(r.files.length, "file"), held && held.length + " held", r.workspace && "workspace " + r.workspace].filter(Boolean).join(" · "))));
      if ((r.files && r.files.length) || held) body.push(filesTable(r.files || [], held));
      if (held) cls += " deny";
      break;
    case "net":
      if (r.decision === "deny") cls += " deny";
      body.push(el("div", {}, el("b", { class: "mono" }, (r.net_host || "?") + (r.net_port ? ":" + r.net_port : "")), " ", decisionBadge(r.decision), " ", el("span", { class: "mono" }, r.rule || ""),
        el("span", { class: "muted" }, [r.net_addr && " " + r.net_addr, r.bytes_up !== undefined && " ↑" + r.bytes_up + " B", r.bytes_down !== undefined && " ↓" + r.bytes_down + " B"].filter(Boolean).join(""))));
      break;
    case "alarm":
      cls += " deny";
      if (r.action === "held") {
        body.push(el("div", {}, badge("HELD", "bad"), " ", el("span", { class: "mono" }, r.path || ""), " ", el("span", { class: "muted" }, (r.what || "").replace(/^held ?/, "")), " ", badge(r.rule || "held", "bad")),
          r.reason ? el("div", { class: "muted" }, r.reason) : null,
          el("div", { class: "muted" }, "not promoted to the workspace (agentbox changes SESSION --held)"));
        break;
      }
      body.push(el("div", {}, badge("ALARM", "bad"), " ", r.what && !r.path ? badge(r.what, "bad") : null, " ",
        r.path ? el("span", { class: "mono" }, r.path + ": " + (r.what || "") + (r.action ? ", " + r.action : "")) : null,
        " ", el("span", { class: "mono" }, r.rule || "")));
      if (r.reason || r.error) body.push(el("div", {}, r.reason || r.error));
      if (r.argv) body.push(el("div", { class: "mono" }, "argv: " + r.argv.join(" ")));
      if (r.parents) body.push(el("div", { class: "muted mono" }, "parents: " + r.parents.join(" ← ")));
      if (r.secret || r.net_host) body.push(el("div", { class: "mono" }, [r.secret && "secret " + r.secret, r.net_method, r.net_host, r.net_path].filter(Boolean).join(" ")));
      break;
    case "exec_denied":
      cls += " deny";
      body.push(el("div", {}, badge(r.decision || "deny", "bad"), " ", el("span", { class: "mono" }, (r.argv || []).join(" ")),
        " ", el("span", { class: "muted" }, "pid " + (r.pid || "?")), " ", el("span", { class: "mono" }, r.rule || ""), r.reason ? " — " + r.reason : ""));
      if (ans) body.push(approvalView(ans, "asked:"));
      break;
    case "session_end":
      body.push(el("div", {}, statusBadge({ ended: true, status: r.status }), " ", el("span", { class: "muted" }, (r.steps || 0) + " steps")));
      if (r.answer) body.push(el("pre", {}, r.answer));
      if (r.files && r.files.length) body.push(filesTable(r.files));
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
  const f = fold(state.records);
  const rows = state.records.filter(l => !f.folded.has(l.line));
  const shown = rows.filter(l => matches(l, callDecision, f));
  const tl = document.getElementById("timeline");
  if (!tl) return;
  tl.replaceChildren(...(shown.length ? shown.map(l => eventView(l, l.line === freshLine, f)) : [el("div", { class: "empty" }, "no records match")]));
  document.getElementById("f-count").textContent = shown.length + " of " + rows.length + " rows" +
    (f.folded.size ? " (" + state.records.length + " records: approvals shown in their call, held changes in their call's changes)" : "");
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
    if (!f.error) card.append(statement(f));
    if (f.unended && f.unended.length) card.append(el("p", {}, "sessions that never ended: ", el("span", { class: "mono" }, f.unended.join(", "))));
    return card;
  }));
}

// statement says in one place what the verification proved and what it
// did not (the server narrows the second by a checkpoint that verifies).
function statement(f) {
  const st = el("dl", { class: "statement" });
  if (f.checkpoint && !f.checkpoint_ok) st.append(el("dt", {}, badge("checkpoint ✗", "bad")), el("dd", { class: "checkpoint" }, f.checkpoint));
  if (!f.intact) st.append(el("dt", {}, badge("damaged", "bad")), el("dd", { class: "damaged" }, "the log was altered: " + plural(f.damage_count, "problem") + ", listed above"));
  if (f.verified && f.verified.length) st.append(el("dt", {}, badge("verified", "ok")), el("dd", { class: "verified" }, el("ul", {}, f.verified.map(v => el("li", {}, v)))));
  if (f.unproven) st.append(el("dt", {}, badge("not verified", "ask")), el("dd", { class: "unproven" }, f.unproven));
  return st;
}

// ---- denials across sessions

// denialKind says what a record denied, or "" when it denies nothing: a
// tool call refused up front, a program stopped at exec time, an egress
// attempt refused, an approval refused (one its call does not show), a
// change held back from the workspace.
function denialKind(r) {
  if (r.event === "exec_denied") return "exec";
  if (r.event === "alarm" && r.action === "held") return "held";
  if (r.decision !== "deny") return "";
  if (r.event === "tool_call") return "call";
  if (r.event === "net") return "network";
  if (r.event === "approval") return "approval";
  return "";
}

function denialWhat(r) {
  if (r.event === "exec_denied") return (r.argv || []).join(" ");
  if (r.event === "net") return (r.net_host || "?") + (r.net_port ? ":" + r.net_port : "");
  if (r.event === "alarm") return (r.what || "held") + " " + (r.path || "");
  return (r.tool || "") + " " + (argsText(r) || (r.argv || []).join(" ") || r.prompt || "");
}

async function showDenials() {
  state.session = null;
  await loadDamage();
  const recs = await api("api/records", { file: state.file });
  // One row per refused call: an approval is folded into its call (held
  // changes stay rows of their own here).
  const f = fold(recs);
  const all = recs.filter(l => denialKind(l.rec) && !(l.rec.event === "approval" && f.folded.has(l.line)));
  const sel = (id, label, opts) => el("label", {}, label, el("select", { id, onchange: render }, el("option", { value: "" }, "any"), opts.map(o => el("option", { value: o }, o))));
  const inp = (id, label, ph) => el("label", {}, label, el("input", { id, type: "search", placeholder: ph, oninput: render }));
  const rules = [...new Set(all.map(l => l.rec.rule).filter(Boolean))].sort();
  const body = el("tbody", {});
  const counter = el("span", { class: "muted", id: "d-count" });
  function render() {
    const kind = val("d-kind"), rule = val("d-rule"), sess = val("d-session").toLowerCase(), text = val("d-text").toLowerCase();
    const shown = all.filter(l => (!kind || denialKind(l.rec) === kind) && (!rule || l.rec.rule === rule) &&
      (!sess || l.rec.session.toLowerCase().startsWith(sess)) && (!text || JSON.stringify([l.rec, f.answer[l.line]]).toLowerCase().includes(text)));
    body.replaceChildren(...(shown.length ? shown.map(l => {
      const r = l.rec, dmg = state.damaged[l.line], ans = f.answer[l.line];
      return el("tr", { class: "row denial-row" + (dmg ? " damaged" : ""), "data-line": l.line, onclick: () => { location.hash = link("/s/" + encodeURIComponent(r.session)); } },
        el("td", {}, fmtTime(r.time)), el("td", { class: "mono" }, short(r.session, 12)), el("td", {}, badge(denialKind(r), "bad")),
        el("td", { class: "mono" }, short(denialWhat(r), 120)), el("td", { class: "mono" }, r.rule || ""), el("td", {}, r.reason || (ans ? "" : r.decided_by) || "",
          ans ? el("div", { class: "muted" }, "asked: " + ans.decision + " by " + (ans.approver || "?") + (ans.decided_by ? " (" + ans.decided_by + ")" : "") + (ans.reason ? " — " + ans.reason : "")) : null),
        el("td", { class: "num" }, l.line, dmg ? el("div", {}, badge("DAMAGED: " + dmg.kind, "bad")) : null));
    }) : [el("tr", {}, el("td", { colspan: 7, class: "empty" }, "no denials match"))]));
    counter.textContent = shown.length + " of " + all.length + " denials";
  }
  setMain(el("h1", {}, "Denials ", el("span", { class: "muted" }, "· all sessions")),
    el("div", { class: "filters" }, sel("d-kind", "kind", ["call", "exec", "network", "approval", "held"]), sel("d-rule", "rule", rules),
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
  document.getElementById("live").checked = live;
  document.getElementById("live").addEventListener("change", follow);
  window.addEventListener("hashchange", () => { const f = state.file; route().then(() => { if (f !== state.file) follow(); }); });
  await route();
  follow();
  document.body.setAttribute("data-ready", "1");
}

start().catch(e => setMain(el("div", { class: "card b-bad" }, "error: " + e.message)));
