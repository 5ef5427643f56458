// crew dashboard: the page's whole logic, plain JavaScript. State is rebuilt from the
// sessions' lines (pushed by server-sent events: the history first, then each new
// line) and drawn at most once a frame. Every text from a session is set as text, never
// as HTML. Requests that change something carry the token in the X-Crew-Token header.
"use strict";

const TOKEN = document.querySelector('meta[name="crew-token"]').content;
// The token stays out of the address bar, the history and any screenshot.
history.replaceState(null, "", "/");

const RESULT_CHARS = 4000;
let state = fresh();
let selected = null; // [session, agent]
let dirty = true;
let approvalsVersion = 0; // redrawn only when they change: a typed message must stay
let approvalsDrawn = -1;

function fresh() {
  return { sessions: new Map() };
}

function session(sid) {
  let s = state.sessions.get(sid);
  if (!s) {
    s = { id: sid, project: "", pid: 0, ended: false, agents: new Map(), approvals: new Map(),
          todos: new Map(), mail: [], members: new Map(), tasks: new Map() };
    state.sessions.set(sid, s);
  }
  return s;
}

function agent(s, id) {
  let a = s.agents.get(id);
  if (!a) {
    const slash = id.indexOf("/");
    a = { id, name: slash < 0 ? id : id.slice(0, slash), kind: id === "lead" ? "lead" : "agent",
          task: "", phase: "thinking", tool: null, runs: [], items: [], calls: new Map(),
          cost: 0, tokens: 0, open: null, version: 0 };
    s.agents.set(id, a);
  }
  return a;
}

// ---- notifications ----------------------------------------------------------------

function notify(title, body) {
  if (!("Notification" in window) || Notification.permission !== "granted") return;
  try { new Notification(title, { body }); } catch (_) { /* some browsers need a worker */ }
}

document.getElementById("notify").addEventListener("click", async () => {
  if (!("Notification" in window)) return;
  const p = await Notification.requestPermission();
  document.getElementById("notify").textContent = p === "granted" ? "Notifications on" : "Notifications " + p;
});

// ---- the lines --------------------------------------------------------------------

function apply(sid, e) {
  const s = session(sid);
  const a = e.agent ? agent(s, e.agent) : null;
  if (a) a.version++;
  switch (e.type) {
    case "session":
      s.project = e.project; s.pid = e.pid; s.started = e.started; break;
    case "session_ended":
      // Nobody waits for its answers any more.
      s.ended = true; s.approvals.clear(); approvalsVersion++; break;
    case "run_started":
      a.runs.push({ start: e.at, end: null, status: null });
      if (!a.task) a.task = e.task;
      a.items.push({ k: "task", text: e.task });
      a.phase = "thinking"; a.open = null; break;
    case "text_delta":
      if (!a.open) { a.open = { k: "text", text: "" }; a.items.push(a.open); }
      a.open.text += e.text; a.streamed = true; break;
    case "message_appended":
      message(a, e.message); break;
    case "turn_finished":
      a.open = null; break;
    case "tool_call_started": {
      a.open = null;
      const item = { k: "tool", call: e.call, decision: null, done: false, error: false, summary: "", result: null };
      a.items.push(item); a.calls.set(e.call.id, item);
      a.phase = "running"; a.tool = e.call.name; break;
    }
    case "permission_decided": {
      const item = a.calls.get(e.call_id);
      if (item) item.decision = e.verdict + " (" + e.source + "): " + e.reason;
      a.phase = e.verdict === "ask" ? "waiting" : "running"; break;
    }
    case "approval_refused": {
      const item = a.calls.get(e.call_id);
      if (item) item.decision = "refused: " + e.reason;
      break;
    }
    case "tool_call_finished": {
      const item = a.calls.get(e.call_id);
      if (item) { item.done = true; item.error = e.is_error; item.summary = e.summary; item.code = e.error_code; }
      a.phase = "thinking"; a.tool = null; break;
    }
    case "request_usage":
      a.tokens += e.cached + e.created + e.uncached + e.output;
      if (typeof e.cost_usd === "number") a.cost += e.cost_usd;
      break;
    case "run_finished": {
      const run = a.runs[a.runs.length - 1];
      if (run) { run.end = e.at; run.status = e.status; }
      a.open = null; a.tool = null;
      if (a.id === "lead") { a.phase = "idle"; break; }
      const ok = e.status === "completed" || e.status === "max_turns";
      a.phase = ok ? "done" : "failed";
      if (live) notify("crew: " + a.id + (ok ? " finished" : " failed"), (e.result || "").slice(0, 200));
      break;
    }
    case "approval_asked":
      s.approvals.set(e.id, { id: e.id, request: e.request, at: e.at });
      approvalsVersion++;
      if (live) notify("crew: " + e.request.agent + " needs input", e.request.call.name);
      break;
    case "approval_answered": case "approval_withdrawn":
      s.approvals.delete(e.id); approvalsVersion++; break;
    case "task_changed":
      s.tasks.set(e.id, { id: e.id, kind: e.kind, status: e.status, description: e.description, result: e.result });
      if (e.kind === "agent") worktreesStale(s);
      break;
    case "team_member_changed":
      s.members.set(e.name, { status: e.status, item: e.current_item }); break;
    case "team_message":
      s.mail.push({ from: e.from, to: e.to, kind: e.kind, summary: e.summary, at: e.at }); break;
    case "todo_changed":
      if (e.status === "deleted") s.todos.delete(e.id);
      else s.todos.set(e.id, { id: e.id, subject: e.subject, status: e.status, owner: e.owner, blocked: e.blocked_by });
      break;
    case "error": case "hook": case "retrying": case "auto_mode_off": case "actor_restarted": case "compacted":
      if (a) a.items.push({ k: "notice", text: e.type + ": " + (e.message || e.reason || e.trigger || "") });
      break;
  }
  dirty = true;
}

// A whole message: results of tool calls, and text the model did not stream.
function message(a, m) {
  for (const b of m.content || []) {
    if (b.type === "tool_result") {
      const item = a.calls.get(b.tool_use_id);
      if (item) item.result = b.content.length > RESULT_CHARS ? b.content.slice(0, RESULT_CHARS) + "\n…" : b.content;
    } else if (b.type === "text" && m.role === "assistant" && !a.streamed) {
      a.items.push({ k: "text", text: b.text });
    }
  }
  if (m.role === "assistant") a.streamed = false;
}

// ---- server-sent events -----------------------------------------------------------

let live = false; // past the history: notify for what happens now
const events = new EventSource("/api/events");
events.onopen = () => {
  // A reconnection replays the history: start over.
  state = fresh(); dirty = true; live = false; approvalsVersion++;
  setTimeout(() => { live = true; }, 1000);
  document.getElementById("status").textContent = "live";
};
events.onerror = () => { document.getElementById("status").textContent = "reconnecting…"; };
// Lines that were ready together come as one event, one per data line.
events.onmessage = (m) => {
  for (const text of m.data.split("\n")) {
    const line = JSON.parse(text);
    apply(line.s, line.e);
  }
};

// ---- requests ---------------------------------------------------------------------

async function post(path, body) {
  const r = await fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-Crew-Token": TOKEN },
    body: JSON.stringify(body),
  });
  return { status: r.status, body: await r.json().catch(() => ({})) };
}

async function get(path) {
  const r = await fetch(path, { headers: { "X-Crew-Token": TOKEN } });
  return r.json().catch(() => ({}));
}

// ---- drawing helpers --------------------------------------------------------------

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "onclick") el.addEventListener("click", v);
    // Through the CSSOM: the page's CSP allows no inline style attributes.
    else if (k === "style") Object.assign(el.style, v);
    else if (k === "class") el.className = v;
    else el.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function replace(id, ...nodes) {
  document.getElementById(id).replaceChildren(...nodes);
}

// Redraws `id` from entries {key, sig, build}: an element whose key and signature are
// unchanged stays as it is (a click on it lands, a typed text stays); others are built.
function reconcile(id, entries) {
  const box = document.getElementById(id);
  const old = new Map();
  for (const c of box.children) if (c.dataset.key !== undefined) old.set(c.dataset.key, c);
  const nodes = entries.map((e) => {
    const o = old.get(e.key);
    if (o && o.dataset.sig === e.sig) return o;
    const n = e.build();
    n.dataset.key = e.key; n.dataset.sig = e.sig;
    return n;
  });
  const same = nodes.length === box.children.length && nodes.every((n, i) => box.children[i] === n);
  if (!same) box.replaceChildren(...nodes);
}

const money = (usd) => "$" + usd.toFixed(4);

function target(req) {
  let args = {};
  try { args = JSON.parse(req.call.arguments); } catch (_) { /* shown raw */ }
  return args.command || req.decision.target || args.path || args.file_path || req.call.arguments;
}

// ---- panels -----------------------------------------------------------------------

function drawTree() {
  const entries = [];
  let cost = 0, tokens = 0;
  for (const s of state.sessions.values()) {
    const agents = [...s.agents.values()];
    for (const a of agents) { cost += a.cost; tokens += a.tokens; }
    const head = (s.ended ? "ended · " : "") + s.project + " · " + s.id;
    entries.push({ key: "s:" + s.id, sig: head, build: () => h("div", { class: "session-head", "data-session": s.id }, head) });
    const lead = agents.filter((a) => a.id === "lead");
    const rest = agents.filter((a) => a.id !== "lead");
    for (const a of lead.concat(rest)) {
      const child = a.id !== "lead";
      const isSel = !!selected && selected[0] === s.id && selected[1] === a.id;
      // A subagent's bus id ends with its task id: its delegation says what it is for.
      const delegated = s.tasks.get(a.id.slice(a.id.lastIndexOf("/") + 1));
      const desc = a.phase + (a.tool ? " " + a.tool : "") + " · " + (delegated ? delegated.description : a.task || "");
      entries.push({ key: "a:" + s.id + ":" + a.id, sig: [isSel, a.phase, desc, money(a.cost)].join("|"), build: () => h("button", {
        class: "agent" + (child ? " child" : "") + (isSel ? " selected" : ""),
        "data-agent": a.id, "data-session": s.id, "data-state": a.phase,
        onclick: () => { selected = [s.id, a.id]; dirty = true; drawn = null; },
      }, h("span", { class: "dot " + a.phase }), a.id, h("span", { class: "cost" }, money(a.cost)),
         h("span", { class: "desc" }, desc)) });
    }
  }
  reconcile("tree", entries);
  document.getElementById("total-cost").textContent = money(cost);
  document.getElementById("total-tokens").textContent = tokens;
}

let drawn = null; // [session, agent, version] of the transcript on show
function drawTranscript() {
  if (!selected) {
    const s = [...state.sessions.values()][0];
    if (s && s.agents.has("lead")) selected = [s.id, "lead"];
    else return;
  }
  const s = state.sessions.get(selected[0]);
  const a = s && s.agents.get(selected[1]);
  if (!a) return;
  if (drawn && drawn[0] === s.id && drawn[1] === a.id && drawn[2] === a.version) return;
  const box = document.getElementById("transcript");
  const atBottom = box.scrollTop + box.clientHeight >= box.scrollHeight - 30;
  const head = a.id + " · " + a.phase + " · " + money(a.cost) + " · " + a.tokens + " tokens";
  const entries = [{ key: "head:" + s.id + a.id, sig: head, build: () => h("h2", {}, head) }];
  a.items.forEach((it, i) => entries.push({
    key: s.id + a.id + ":" + i,
    sig: it.k === "tool" ? [it.decision, it.done, it.error, it.summary, it.result && it.result.length].join("|") : String(it.text.length),
    build: () => item(it),
  }));
  reconcile("transcript", entries);
  if (atBottom) box.scrollTop = box.scrollHeight;
  drawn = [s.id, a.id, a.version];
}

function item(it) {
    switch (it.k) {
      case "task": return h("div", { class: "item task" }, it.text);
      case "text": return h("div", { class: "item text" }, it.text);
      case "notice": return h("div", { class: "item notice" }, it.text);
      default: return h("div", { class: "item tool" + (it.done ? (it.error ? " error" : " ok") : ""), "data-call": it.call.id },
        h("b", {}, it.call.name), " ", it.call.arguments.slice(0, 300),
        it.decision ? h("div", { class: "decision" }, it.decision) : null,
        it.done ? h("div", { class: "result" }, it.result !== null ? it.result : (it.code ? it.code + ": " : "") + it.summary) : h("div", { class: "decision" }, "running…"));
    }
}

const ANSWERS = [
  ["allow_once", "1 Allow once"],
  ["allow_session", "2 Allow for this session"],
  ["allow_forever", "3 Always allow"],
  ["deny", "4 Deny"],
];

function drawApprovals() {
  if (approvalsDrawn === approvalsVersion) return;
  approvalsDrawn = approvalsVersion;
  const list = [];
  for (const s of state.sessions.values()) {
    for (const ap of s.approvals.values()) {
      const input = h("input", { placeholder: "optional: tell the model why (deny)", "data-deny-message": ap.id });
      const who = ap.request.teammate ? "teammate " + ap.request.teammate + " (" + ap.request.agent + ")" : ap.request.agent;
      list.push(h("div", { class: "approval", "data-approval": ap.id, "data-session": s.id },
        h("div", {}, h("b", {}, who), " asks to run ", h("b", {}, ap.request.call.name)),
        h("div", { class: "target" }, target(ap.request)),
        h("div", { class: "muted" }, ap.request.decision.reason),
        ANSWERS.map(([kind, label]) => h("button", {
          "data-answer": kind,
          onclick: async () => {
            const answer = kind === "deny" ? { answer: "deny", message: input.value.trim() || null } : { answer: kind };
            const r = await post("/api/answer", { session: s.id, id: ap.id, answer });
            if (r.status !== 200) alertLine(r.body.error || "not answered");
          },
        }, label)),
        input));
    }
  }
  const count = document.getElementById("approvals-count");
  count.textContent = list.length;
  count.className = "badge" + (list.length ? " hot" : "");
  document.title = (list.length ? "(" + list.length + ") " : "") + "crew dashboard";
  if (list.length) replace("approvals", ...list);
  else replace("approvals", h("p", { class: "muted" }, "Nothing waits for you."));
}

function alertLine(text) {
  document.getElementById("worktree-message").textContent = text;
}

// Worktrees: listed from each session on demand (after a task changes, on refresh).
const worktrees = new Map(); // session -> listing
const confirming = new Set(); // "session/id" waiting for a discard confirmation
let staleTimer = null;
function worktreesStale() {
  clearTimeout(staleTimer);
  staleTimer = setTimeout(loadWorktrees, 300);
}

async function loadWorktrees() {
  for (const s of state.sessions.values()) {
    if (s.ended) continue;
    const r = await get("/api/worktrees?session=" + encodeURIComponent(s.id));
    if (r.worktrees) worktrees.set(s.id, r.worktrees);
  }
  drawWorktrees();
}
document.getElementById("worktrees-refresh").addEventListener("click", loadWorktrees);

async function review(sid, id, action, confirmation) {
  const r = await post("/api/review", { session: sid, id, action, confirmation });
  if (action === "diff" && r.body.ok) return showOverlay("diff of " + id, r.body.text || "(no changes)", true);
  alertLine(r.body.text || r.body.confirm || r.body.error || "");
  confirming.delete(sid + "/" + id);
  loadWorktrees();
}

function drawWorktrees() {
  const rows = [];
  for (const [sid, list] of worktrees) {
    for (const w of list) {
      const key = sid + "/" + w.id;
      const actions = confirming.has(key)
        ? [h("span", {}, "Discard with the work it holds (" + w.state + ")? "),
           h("button", { class: "danger", "data-action": "confirm-discard", onclick: () => review(sid, w.id, "discard", "given") }, "Yes, discard"),
           h("button", { "data-action": "cancel", onclick: () => { confirming.delete(key); drawWorktrees(); } }, "Cancel")]
        : [["diff", "diff"], ["merge", "merge"], ["squash", "squash"]].map(([action, label]) =>
            h("button", { "data-action": action, onclick: () => review(sid, w.id, action, "not_given") }, label))
          .concat([
            h("button", { "data-action": "keep", onclick: () => alertLine("Worktree " + w.id + " kept for later.") }, "keep"),
            h("button", { class: "danger", "data-action": "discard", onclick: () => {
              if (w.confirm_discard) { confirming.add(key); drawWorktrees(); } else review(sid, w.id, "discard", "not_given");
            } }, "discard")]);
      rows.push({ key: key, sig: [w.state, w.branch, w.description, confirming.has(key)].join("|"), build: () =>
        h("div", { class: "row", "data-worktree": w.id, "data-session": sid },
          h("b", {}, w.id), " ", h("span", { class: "muted" }, w.state + " · " + w.branch),
          h("div", { class: "desc" }, w.description),
          h("div", { class: "actions" }, actions)) });
    }
  }
  if (!rows.length) rows.push({ key: "none", sig: "", build: () => h("p", { class: "muted" }, "No worktrees.") });
  reconcile("worktrees", rows);
}

function drawTeam() {
  const parts = [];
  for (const s of state.sessions.values()) {
    for (const [name, m] of s.members) parts.push(h("div", { class: "row" }, h("b", {}, name), " " + m.status + (m.item ? " · item " + m.item : "")));
    const todos = [...s.todos.values()];
    if (todos.length) parts.push(h("h2", {}, "Work list"), todos.map((t) =>
      h("div", { class: "row", "data-todo": t.id }, "#" + t.id + " [" + t.status + "] " + t.subject + (t.owner ? " · " + t.owner : "") + (t.blocked && t.blocked.length ? " · after " + t.blocked.join(",") : ""))));
    if (s.mail.length) parts.push(h("h2", {}, "Mail"), s.mail.slice(-30).map((m) =>
      h("div", { class: "row" }, h("b", {}, m.from + " → " + m.to), " " + (m.kind !== "text" ? "[" + m.kind + "] " : "") + m.summary)));
  }
  if (parts.length) replace("team", ...parts);
  else replace("team", h("p", { class: "muted" }, "No team."));
}

function drawCommands() {
  const rows = [];
  for (const s of state.sessions.values()) {
    for (const t of s.tasks.values()) {
      if (t.kind !== "command") continue;
      rows.push(h("div", { class: "row", "data-command": t.id },
        h("b", {}, t.id), " " + t.status + " · " + t.description, " ",
        h("button", { class: "small", onclick: async () => {
          const r = await get("/api/output?session=" + encodeURIComponent(s.id) + "&task=" + encodeURIComponent(t.id));
          showOverlay("output of " + t.id, r.output !== undefined ? r.output : r.error, false);
        } }, "output")));
    }
  }
  if (rows.length) replace("commands", ...rows);
  else replace("commands", h("p", { class: "muted" }, "No background commands."));
}

function drawTimeline() {
  const lanes = [];
  let from = Infinity;
  const now = Date.now();
  for (const s of state.sessions.values()) for (const a of s.agents.values()) for (const r of a.runs) from = Math.min(from, r.start);
  if (from === Infinity) return replace("timeline", h("p", { class: "muted" }, "Nothing ran yet."));
  const span = Math.max(now - from, 1000);
  for (const s of state.sessions.values()) {
    for (const a of s.agents.values()) {
      const bars = a.runs.map((r) => {
        const end = r.end || now;
        const cls = r.end === null ? "" : a.id === "lead" ? "idle" : (r.status === "completed" || r.status === "max_turns") ? "done" : "failed";
        return h("div", { class: "bar " + cls, style: { left: ((r.start - from) / span * 100).toFixed(2) + "%", width: ((end - r.start) / span * 100).toFixed(2) + "%" },
          title: a.id + ": " + ((end - r.start) / 1000).toFixed(1) + " s" });
      });
      lanes.push(h("div", { class: "lane", "data-lane": a.id }, h("div", { class: "lane-name" }, a.id), h("div", { class: "lane-track" }, bars)));
    }
  }
  replace("timeline", ...lanes);
}

// ---- the overlay (diffs, command output) ------------------------------------------

function showOverlay(title, text, diff) {
  document.getElementById("overlay-title").textContent = title;
  const body = document.getElementById("overlay-body");
  body.replaceChildren(...(text || "").split("\n").map((l) => {
    const cls = !diff ? "" : l.startsWith("+") ? "add" : l.startsWith("-") ? "del" : l.startsWith("@@") ? "hunk" : "";
    return h("div", { class: cls }, l || " ");
  }));
  document.getElementById("overlay").hidden = false;
}
document.getElementById("overlay-close").addEventListener("click", () => { document.getElementById("overlay").hidden = true; });

// ---- the frame loop ---------------------------------------------------------------

function frame() {
  if (dirty) {
    dirty = false;
    drawTree(); drawTranscript(); drawApprovals(); drawTeam(); drawCommands(); drawTimeline();
  }
  requestAnimationFrame(frame);
}
requestAnimationFrame(frame);
// The timeline moves with the clock, the worktrees change on disk.
setInterval(() => { dirty = true; }, 1000);
setTimeout(loadWorktrees, 500);
