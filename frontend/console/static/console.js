// Tether console: a client of the runner's sessions API (/v1).
//
// Rules this file keeps:
// - The token lives in sessionStorage (this tab only) and travels only in
//   an Authorization header. Event streams are read with fetch(), which can
//   set that header; EventSource and a browser WebSocket cannot, and a token
//   in a URL ends up in logs and history.
// - Every string from the runner or an agent reaches the page as text
//   (textContent, text nodes), never as HTML.
// - A session's events are applied in seq order, each once: the stream
//   resumes after the last seq applied (Last-Event-ID), and any event at or
//   below it is ignored.
"use strict";

(() => {
  const TOKEN_KEY = "tether.token";
  const LIST_EVERY_MS = 4000;
  const RETRY_MS = [500, 1000, 2000, 4000, 8000];

  const $ = (id) => document.getElementById(id);

  // el builds an element. String and number children become text nodes;
  // props set properties (textContent, className, …) or, for keys with a
  // dash or "aria"/"data" prefixes, attributes.
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.includes("-") || k === "role" || k === "for") node.setAttribute(k, String(v));
      else if (k === "on") for (const [ev, fn] of Object.entries(v)) node.addEventListener(ev, fn);
      else node[k] = v;
    }
    for (const c of children.flat()) {
      if (c === undefined || c === null || c === false) continue;
      node.append(typeof c === "string" || typeof c === "number" ? String(c) : c);
    }
    return node;
  }

  function show(node, text) {
    node.textContent = text || "";
    node.hidden = !text;
  }

  const sleep = (ms, signal) => new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => { clearTimeout(t); resolve(); }, { once: true });
  });

  // ---- the API -----------------------------------------------------------

  class APIError extends Error {
    constructor(status, body) {
      const e = body && body.error;
      super((e && (e.message || e.code)) || `the runner answered ${status}`);
      this.status = status;
      this.code = e && e.code;
    }
  }
  class Unauthorized extends Error {}

  const token = () => sessionStorage.getItem(TOKEN_KEY) || "";

  function headers(extra, tok) {
    return Object.assign({ Authorization: "Bearer " + (tok ?? token()) }, extra);
  }

  // api calls the sessions API; a 401 signs the console out.
  async function api(method, path, body) {
    const init = { method, headers: headers(), cache: "no-store", credentials: "omit" };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const resp = await fetch(path, init);
    if (resp.status === 401) {
      signOut(REVOKED);
      throw new Unauthorized();
    }
    const text = await resp.text();
    let data = null;
    if (text) {
      try { data = JSON.parse(text); } catch { /* not JSON: the status says enough */ }
    }
    if (!resp.ok) throw new APIError(resp.status, data);
    return data;
  }

  const sessionPath = (id) => "/v1/sessions/" + encodeURIComponent(id);

  // ---- signing in and out ------------------------------------------------

  const REVOKED = "This runner no longer accepts your token (it expired or was revoked). Sign in again.";
  let listTimer = 0;
  let current = null; // the open SessionView
  let agents = {};

  async function signIn(event) {
    event.preventDefault();
    const tok = $("token").value.trim();
    const msg = $("signin-message");
    show(msg, "");
    if (!tok) return show(msg, "Enter a token.");
    let resp;
    try {
      resp = await fetch("/v1/agents", { headers: headers({}, tok), cache: "no-store", credentials: "omit" });
    } catch {
      return show(msg, "Cannot reach the runner.");
    }
    if (resp.status === 401) return show(msg, "Wrong token: this runner does not accept it.");
    if (!resp.ok) return show(msg, `The runner refused the sign-in (HTTP ${resp.status}).`);
    sessionStorage.setItem(TOKEN_KEY, tok);
    $("token").value = "";
    await enter();
  }

  // signOut forgets the token and shows the sign-in form, with why.
  function signOut(why) {
    sessionStorage.removeItem(TOKEN_KEY);
    clearTimeout(listTimer);
    clearTimeout(soonTimer);
    if (current) current.stop();
    current = null;
    $("session-list").replaceChildren();
    $("events").replaceChildren();
    $("create-agent").replaceChildren();
    $("app-view").hidden = true;
    document.title = "Tether";
    $("sign-out").hidden = true;
    show($("runner-state"), "");
    $("signin-view").hidden = false;
    show($("signin-message"), why || "");
    $("token").focus();
  }

  async function enter() {
    $("signin-view").hidden = true;
    $("app-view").hidden = false;
    $("sign-out").hidden = false;
    try {
      const body = await api("GET", "/v1/agents");
      agents = body.agents || {};
      fillAgents(agents, body.unavailable || {});
    } catch (e) {
      if (e instanceof Unauthorized) return;
      show($("runner-state"), "Cannot list agents: " + e.message);
    }
    await refreshList();
    route();
  }

  function fillAgents(available, unavailable) {
    const select = $("create-agent");
    select.replaceChildren();
    for (const name of Object.keys(available).sort()) select.append(el("option", { value: name }, name));
    for (const name of Object.keys(unavailable).sort()) {
      select.append(el("option", { value: name, disabled: true }, `${name} (unavailable: ${unavailable[name]})`));
    }
  }

  // ---- the sessions list -------------------------------------------------

  // refreshList fetches the list now and then every LIST_EVERY_MS: one
  // request at a time, and one timer; a call while one is in flight makes
  // it go again at once when it is done.
  let listing = false;
  let listAgain = false;
  async function refreshList() {
    clearTimeout(listTimer);
    if (!token()) return;
    if (listing) {
      listAgain = true;
      return;
    }
    listing = true;
    try {
      const [list, pending] = await Promise.all([api("GET", "/v1/sessions"), api("GET", "/v1/approvals")]);
      if (!token()) return; // signed out meanwhile
      renderList(list.sessions || [], pending.approvals || []);
      show($("runner-state"), "");
    } catch (e) {
      if (e instanceof Unauthorized) return;
      show($("runner-state"), "Cannot reach the runner: " + e.message);
    } finally {
      listing = false;
    }
    clearTimeout(listTimer);
    listTimer = setTimeout(refreshList, listAgain ? 0 : LIST_EVERY_MS);
    listAgain = false;
  }

  // Events that change what the list shows: it is refreshed at once
  // rather than at the next poll.
  const LIST_CHANGES = new Set(["turn.started", "turn.completed", "approval.requested", "approval.resolved", "session.ended"]);
  let soonTimer = 0;
  function soonRefreshList() {
    clearTimeout(soonTimer);
    soonTimer = setTimeout(refreshList, 150);
  }

  function renderList(sessions, approvals) {
    const waiting = new Map();
    for (const a of approvals) waiting.set(a.session_id, (waiting.get(a.session_id) || 0) + 1);
    const open = currentID();
    const rows = sessions.slice().reverse().map((s) => {
      const n = waiting.get(s.id) || 0;
      const link = el("a", { href: "#session=" + encodeURIComponent(s.id), "aria-current": s.id === open ? "true" : "false" },
        el("div", { className: "session-ws" }, s.workspace_id),
        el("div", { className: "session-meta" },
          el("span", { className: "badge agent" }, s.agent),
          el("span", { className: "badge state " + s.state }, s.state),
          n ? el("span", { className: "badge pending" }, `${n} pending`) : null));
      return el("li", { "data-session": s.id }, link);
    });
    $("session-list").replaceChildren(...rows);
    $("no-sessions").hidden = sessions.length > 0;
    show($("approvals-summary"), approvals.length ? `${approvals.length} approval${approvals.length > 1 ? "s" : ""} waiting` : "");
    document.title = approvals.length ? `(${approvals.length}) Tether` : "Tether";
    if (current) {
      const s = sessions.find((x) => x.id === current.id);
      if (s && !current.ended) current.setState(s.state);
    }
  }

  // ---- navigation: #new, #session=<id> ----------------------------------

  function currentID() {
    const m = /^#session=(.+)$/.exec(location.hash);
    return m ? decodeURIComponent(m[1]) : "";
  }

  function route() {
    if (!token()) return;
    const id = currentID();
    const opening = $("create-view").hidden && location.hash === "#new";
    $("create-view").hidden = location.hash !== "#new";
    $("empty-view").hidden = location.hash === "#new" || !!id;
    if (current && current.id !== id) {
      current.stop();
      current = null;
    }
    $("session-view").hidden = !id;
    if (id && !current) {
      current = new SessionView(id);
      current.start();
    }
    for (const a of document.querySelectorAll("#session-list a")) {
      a.setAttribute("aria-current", a.closest("li").dataset.session === id ? "true" : "false");
    }
    // Focus the form as it opens, not on every route: a late hashchange
    // must not pull the caret out of a field someone is typing in.
    if (opening && !$("create-view").contains(document.activeElement)) $("create-workspace").focus();
  }

  async function createSession(event) {
    event.preventDefault();
    const msg = $("create-message");
    show(msg, "");
    const body = { agent: $("create-agent").value, workspace_id: $("create-workspace").value.trim() };
    const prompt = $("create-prompt").value;
    if (prompt.trim()) body.prompt = prompt;
    const button = event.submitter;
    if (button) button.disabled = true;
    try {
      const info = await api("POST", "/v1/sessions", body);
      $("create-form").reset();
      location.hash = "#session=" + encodeURIComponent(info.id);
      refreshList();
    } catch (e) {
      if (!(e instanceof Unauthorized)) show(msg, "Could not start the session: " + e.message);
    } finally {
      if (button) button.disabled = false;
    }
  }

  // ---- one session -------------------------------------------------------

  class SessionView {
    constructor(id) {
      this.id = id;
      this.lastSeq = 0;
      this.items = new Map(); // item id → {li, item, input}
      this.approvals = new Map(); // approval id → card
      this.ended = false;
      this.abort = new AbortController();
      $("events").replaceChildren();
      show($("session-ended"), "");
      show($("session-message"), "");
      $("session-title").textContent = id;
      this.setState("");
      this.setLive("connecting…");
    }

    start() {
      this.load();
      this.follow();
    }

    stop() { this.abort.abort(); }

    get stopped() { return this.abort.signal.aborted; }

    async load() {
      try {
        const info = await api("GET", sessionPath(this.id));
        if (this.stopped) return;
        $("session-title").textContent = `${info.workspace_id} · ${info.agent}`;
        if (!this.ended) this.setState(info.state);
      } catch (e) {
        if (e instanceof APIError && e.status === 404) this.gone();
      }
    }

    setState(s) {
      const badge = $("session-state");
      badge.textContent = s;
      badge.className = "badge " + s;
      badge.hidden = !s;
      const ended = s === "ended";
      $("interrupt").disabled = ended || s === "idle";
      $("close-session").disabled = ended;
      for (const c of $("prompt-form").elements) c.disabled = ended;
    }

    setLive(text) { $("stream-state").textContent = text; }

    gone() {
      this.ended = true;
      this.stop();
      this.setState("ended");
      show($("session-ended"), "This session is not on the runner (it may have been removed).");
      this.setLive("");
    }

    // follow reads the session's events, reconnecting after the last seq
    // applied until the session ends, the view closes or the token is refused.
    async follow() {
      let attempt = 0;
      while (!this.stopped && !this.ended) {
        let resp;
        try {
          resp = await fetch(sessionPath(this.id) + "/events", {
            headers: headers({ Accept: "text/event-stream", "Last-Event-ID": String(this.lastSeq) }),
            cache: "no-store", credentials: "omit", signal: this.abort.signal,
          });
        } catch {
          resp = null;
        }
        if (this.stopped) return;
        if (resp && resp.status === 401) return signOut(REVOKED);
        if (resp && resp.status === 404) return this.gone();
        if (resp && resp.ok && resp.body) {
          this.setLive("live");
          attempt = 0;
          try {
            await this.read(resp.body);
          } catch { /* dropped: reconnect below */ }
          if (this.stopped || this.ended) break;
        }
        const wait = RETRY_MS[Math.min(attempt++, RETRY_MS.length - 1)];
        this.setLive(`connection lost, reconnecting (after seq ${this.lastSeq})…`);
        await sleep(wait, this.abort.signal);
      }
      if (this.ended) this.setLive("");
    }

    // read parses Server-Sent Events until the body ends.
    async read(body) {
      const reader = body.pipeThrough(new TextDecoderStream()).getReader();
      this.abort.signal.addEventListener("abort", () => reader.cancel().catch(() => {}), { once: true });
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buf += value.replace(/\r\n?/g, "\n");
        let cut;
        while ((cut = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          let kind = "message";
          const data = [];
          for (const line of block.split("\n")) {
            if (line.startsWith(":")) continue;
            const colon = line.indexOf(":");
            const field = colon < 0 ? line : line.slice(0, colon);
            const v = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
            if (field === "event") kind = v;
            else if (field === "data") data.push(v);
          }
          if (!data.length) continue;
          if (kind === "stream_error") throw new Error(data.join("\n"));
          this.apply(JSON.parse(data.join("\n")));
        }
      }
    }

    // apply shows one event, once, in seq order.
    apply(ev) {
      if (!ev || typeof ev.seq !== "number" || ev.seq <= this.lastSeq) return;
      this.lastSeq = ev.seq;
      const pane = $("events").closest(".pane");
      const atBottom = pane.scrollHeight - pane.scrollTop - pane.clientHeight < 80;
      render(this, ev);
      if (atBottom) pane.scrollTop = pane.scrollHeight;
      if (LIST_CHANGES.has(ev.kind)) soonRefreshList();
    }

    async interrupt() {
      show($("session-message"), "");
      try {
        await api("POST", sessionPath(this.id) + "/interrupt");
      } catch (e) {
        if (!(e instanceof Unauthorized)) show($("session-message"), "Could not interrupt: " + e.message);
      }
    }

    async close() {
      show($("session-message"), "");
      try {
        await api("DELETE", sessionPath(this.id));
        refreshList();
      } catch (e) {
        if (!(e instanceof Unauthorized)) show($("session-message"), "Could not end the session: " + e.message);
      }
    }

    async prompt(event) {
      event.preventDefault();
      const box = $("prompt");
      const text = box.value;
      if (!text.trim()) return;
      show($("session-message"), "");
      try {
        await api("POST", sessionPath(this.id) + "/prompt", { text });
        box.value = "";
      } catch (e) {
        if (!(e instanceof Unauthorized)) show($("session-message"), "Could not send: " + e.message);
      }
    }

    async resolve(approval, decision, scope, card, answers) {
      const body = { decision };
      if (scope) body.scope = scope;
      if (answers && answers.length) body.answers = answers;
      show($("session-message"), "");
      for (const b of card.querySelectorAll("button, select, input")) b.disabled = true;
      try {
        await api("POST", `${sessionPath(this.id)}/approvals/${encodeURIComponent(approval.id)}/resolve`, body);
      } catch (e) {
        if (e instanceof Unauthorized) return;
        // already_resolved: the approval.resolved event says by whom.
        if (e.code !== "already_resolved") {
          for (const b of card.querySelectorAll("button, select, input")) b.disabled = false;
          show($("session-message"), "Could not answer the approval: " + e.message);
        }
      }
    }
  }

  // ---- rendering events --------------------------------------------------

  const when = (t) => (t ? new Date(t).toLocaleTimeString() : "");

  function add(li) {
    $("events").append(li);
    return li;
  }

  function render(view, ev) {
    switch (ev.kind) {
      case "session.started": {
        const s = ev.session || {};
        add(el("li", { className: "turn-mark" },
          `Session started · ${s.agent || ""}${s.model ? " · " + s.model : ""} · ${when(ev.time)}`));
        break;
      }
      case "turn.started":
        view.setState("running");
        add(el("li", { className: "turn-mark", "data-turn": ev.turn_id }, `Turn started · ${when(ev.time)}`));
        break;
      case "item.started":
      case "item.completed":
        if (ev.item) renderItem(view, ev.item);
        break;
      case "item.delta":
        if (ev.delta) renderDelta(view, ev.delta);
        break;
      case "approval.requested":
        if (ev.approval) renderApproval(view, ev.approval);
        break;
      case "approval.resolved":
        if (ev.resolution) renderResolution(view, ev.resolution);
        break;
      case "error": {
        const e = ev.error || {};
        add(el("li", { className: "error-line" },
          `Error (${e.code || "unknown"}${e.status ? " " + e.status : ""}): ${e.message || ""}${e.retrying ? " — retrying" : ""}`));
        break;
      }
      case "usage":
        break; // shown with the turn's end
      case "turn.completed": {
        const t = ev.turn || {};
        const status = t.status || "completed";
        view.setState("idle");
        const bits = [`Turn ${status}`];
        if (t.duration_ms) bits.push(`${(t.duration_ms / 1000).toFixed(1)} s`);
        const u = ev.usage;
        if (u) bits.push(`${u.input_tokens} in / ${u.output_tokens} out tokens`);
        if (u && u.cost_usd) bits.push(`$${u.cost_usd.toFixed(4)}`);
        add(el("li", { className: "turn-mark turn-end " + status, "data-turn-end": status }, bits.join(" · "),
          ev.error ? el("div", { className: "error-line" }, `${ev.error.code}: ${ev.error.message}`) : null));
        break;
      }
      case "session.ended": {
        view.ended = true;
        view.setState("ended");
        const reason = (ev.session && ev.session.reason) || "ended";
        const why = ev.error ? ` — ${ev.error.message}` : "";
        show($("session-ended"), `This session ended: ${reason}${why}`);
        add(el("li", { className: "turn-mark" }, `Session ended (${reason}) · ${when(ev.time)}`));
        break;
      }
    }
  }

  const ITEM_LABEL = {
    user_message: "You", message: "Agent", reasoning: "Thinking", command: "Command",
    file_change: "File change", tool_call: "Tool", plan: "Plan", question: "Question",
  };

  // renderItem draws an item from scratch: a completed item carries
  // everything, so it replaces whatever its start and deltas drew.
  function renderItem(view, item) {
    let entry = view.items.get(item.id);
    if (!entry) {
      entry = { li: add(el("li", { "data-item": item.id })), input: "" };
      view.items.set(item.id, entry);
    }
    entry.item = item;
    entry.parts = {};
    entry.shown = false; // whether the input is shown in a better form than raw JSON
    const head = el("div", { className: "card-head" }, el("span", { className: "title" }, ITEM_LABEL[item.type] || item.type));
    if (item.status && item.type !== "user_message" && item.type !== "message") {
      head.append(el("span", { className: "badge " + item.status, "data-status": item.status }, item.status));
    }
    const card = el("div", { className: `card item ${item.type}`, "data-type": item.type }, head);
    switch (item.type) {
      case "user_message":
      case "message":
      case "reasoning":
        card.append(entry.parts.text = el("p", { className: "text" }, item.text || ""));
        break;
      case "command": {
        const c = item.command || {};
        const command = c.command || parsed(entry.input).command;
        if (typeof command === "string") {
          card.append(el("pre", { className: "command-line" }, "$ " + command));
          entry.shown = true;
        }
        card.append(entry.parts.output = el("pre", { className: "output", hidden: !c.output }, c.output || ""));
        if (c.exit_code !== undefined && c.exit_code !== null) head.append(el("span", {}, `exit ${c.exit_code}`));
        break;
      }
      case "tool_call": {
        const t = item.tool || {};
        head.append(el("span", { className: "title" }, (t.server ? t.server + " · " : "") + (t.name || "")));
        card.append(entry.parts.input = el("pre", { className: "input" }, pretty(t.input)));
        card.append(entry.parts.output = el("pre", { className: "output" + (t.is_error ? " error-line" : ""), hidden: !t.output }, t.output || ""));
        break;
      }
      case "file_change":
        for (const ch of item.changes || []) {
          card.append(el("div", { className: "card-head" }, el("span", { className: "title" }, ch.path), el("span", { className: "badge" }, ch.kind)));
          const diff = ch.diff || diffFromInput(entry.input);
          if (diff) entry.shown = true;
          card.append(diffView(diff));
        }
        break;
      case "plan":
        card.append(el("ol", {}, (item.plan || []).map((s) => el("li", {}, `${s.text} `, el("span", { className: "badge " + s.status }, s.status)))));
        break;
      case "question": {
        const q = item.question || {};
        card.append(el("p", { className: "text" }, q.prompt || ""));
        card.append(el("ul", {}, (q.options || []).map((o) => el("li", {}, o.label))));
        if (item.text) card.append(el("p", { className: "text answer" }, "Answer: " + item.text));
        break;
      }
      default:
        if (item.text) card.append(el("p", { className: "text" }, item.text));
    }
    // A tool's input streaming in, before the item is whole.
    if (item.status === "in_progress" && !entry.shown && !["user_message", "message", "reasoning", "tool_call"].includes(item.type)) {
      card.append(entry.parts.input = el("pre", { className: "input", hidden: !entry.input }, entry.input));
    }
    entry.li.replaceChildren(card);
  }

  function renderDelta(view, d) {
    const entry = view.items.get(d.item_id);
    if (!entry) return;
    if (d.field === "input") entry.input += d.text;
    const part = d.field === "text" ? entry.parts.text : d.field === "output" ? entry.parts.output : entry.parts.input;
    if (!part) return;
    part.append(d.text); // a text node
    part.hidden = false;
  }

  function pretty(raw) {
    if (raw === undefined || raw === null) return "";
    if (typeof raw === "string") return raw;
    return JSON.stringify(raw, null, 2);
  }

  // parsed is a tool's input as an object, or {} while it is incomplete.
  function parsed(input) {
    if (input && typeof input === "object") return input;
    try {
      const v = JSON.parse(input || "{}");
      return v && typeof v === "object" ? v : {};
    } catch {
      return {};
    }
  }

  // diffFromInput derives a diff from a file tool's input when the agent
  // gives none: Write's content is all added, Edit's old text removed and
  // its new text added.
  function diffFromInput(input) {
    const v = parsed(input);
    const lines = (s, sign) => String(s).replace(/\n$/, "").split("\n").map((l) => sign + l).join("\n");
    if (typeof v.content === "string") return lines(v.content, "+");
    const edits = Array.isArray(v.edits) ? v.edits : [v];
    return edits.filter((e) => typeof e.old_string === "string" || typeof e.new_string === "string")
      .map((e) => "@@\n" + lines(e.old_string || "", "-") + "\n" + lines(e.new_string || "", "+")).join("\n");
  }

  function diffView(diff) {
    if (!diff) return el("p", { className: "muted" }, "No diff given.");
    return el("pre", { className: "diff" }, diff.replace(/\n$/, "").split("\n").map((line) => {
      let cls = "line";
      if (line.startsWith("+++") || line.startsWith("---")) cls += " file";
      else if (line.startsWith("+")) cls += " add";
      else if (line.startsWith("-")) cls += " del";
      else if (line.startsWith("@@")) cls += " hunk";
      return el("span", { className: cls }, line + "\n");
    }));
  }

  function renderApproval(view, a) {
    const input = pretty(a.input);
    const item = a.item_id && view.items.get(a.item_id);
    // The approval has the tool's whole input: the item shows it in its
    // own form (a command line, a diff) rather than as streamed JSON.
    if (item && a.input) {
      item.input = typeof a.input === "string" ? a.input : JSON.stringify(a.input);
      if (item.item) renderItem(view, item.item);
    }
    const actions = el("div", { className: "actions" });
    // A question is answered by allowing it with the chosen options.
    let choices = null;
    const q = a.kind === "question" && a.question;
    if (q && (q.options || []).length) {
      const name = "answer-" + a.id;
      choices = el("fieldset", { className: "choices" }, el("legend", {}, q.prompt || "Choose"),
        q.options.map((o) => el("label", {},
          el("input", { type: q.multi_select ? "checkbox" : "radio", name, value: o.id }), " ", o.label)));
    }
    let scope = null;
    const scopes = a.scopes || [];
    if (scopes.length > 1) {
      const sid = "scope-" + view.approvals.size;
      scope = el("select", { id: sid }, scopes.map((s) => el("option", { value: s }, s)));
      actions.append(el("label", { for: sid }, "Scope"), scope);
    }
    const card = el("div", { className: "card approval", "data-approval": a.id, role: "group", "aria-label": "Approval: " + (a.title || a.tool || "") },
      el("div", { className: "card-head" }, el("span", { className: "title" }, "Approval needed"),
        el("span", { className: "badge pending", "data-status": "pending" }, "pending"),
        a.expires ? el("span", {}, `default ${a.default || "deny"} at ${when(a.expires)}`) : null),
      el("p", { className: "text" }, a.title || a.tool || ""),
      input && !choices ? el("pre", { className: "input" }, input) : null,
      choices,
      actions);
    const answer = (decision) => () => {
      const answers = decision === "allow" && choices ? [...choices.querySelectorAll("input:checked")].map((i) => i.value) : [];
      if (choices && decision === "allow" && !answers.length) return show($("session-message"), "Choose an answer first.");
      view.resolve(a, decision, scope ? scope.value : "", card, answers);
    };
    actions.prepend(
      el("button", { type: "button", on: { click: answer("allow") } }, choices ? "Answer" : "Approve"),
      el("button", { type: "button", className: "deny", on: { click: answer("deny") } }, "Deny"));
    view.approvals.set(a.id, card);
    add(el("li", {}, card));
  }

  function renderResolution(view, r) {
    const card = view.approvals.get(r.approval_id);
    if (!card) return;
    const allowed = r.decision === "allow";
    const badge = card.querySelector(".badge");
    badge.textContent = allowed ? "approved" : "denied";
    badge.className = "badge " + (allowed ? "completed" : "declined");
    badge.dataset.status = allowed ? "approved" : "denied";
    const bits = [allowed ? "Approved" : "Denied"];
    if (allowed && r.scope && r.scope !== "once") bits.push(`for this ${r.scope}`);
    if (r.by) bits.push(`by ${r.by}`);
    if (r.cause && r.cause !== "client") bits.push(`(${r.cause})`);
    if (r.reason) bits.push(`— ${r.reason}`);
    if (r.answers && r.answers.length) {
      const labels = new Map([...card.querySelectorAll(".choices input")].map((i) => [i.value, i.parentElement.textContent.trim()]));
      bits.push(`— ${r.answers.map((id) => labels.get(id) || id).join(", ")}`);
    }
    for (const i of card.querySelectorAll(".choices input")) i.disabled = true;
    card.querySelector(".actions").replaceWith(el("p", { className: "muted resolution" }, bits.join(" ")));
  }

  // ---- wiring ------------------------------------------------------------

  function init() {
    $("signin-form").addEventListener("submit", signIn);
    $("sign-out").addEventListener("click", () => signOut("Signed out."));
    $("new-session").addEventListener("click", () => { location.hash = "#new"; route(); });
    $("create-form").addEventListener("submit", createSession);
    $("prompt-form").addEventListener("submit", (e) => (current ? current.prompt(e) : e.preventDefault()));
    // Ctrl+Enter (⌘+Enter) sends; Enter alone is a new line.
    for (const id of ["prompt", "create-prompt"]) {
      $(id).addEventListener("keydown", (e) => {
        if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
          e.preventDefault();
          e.target.form.requestSubmit();
        }
      });
    }
    $("interrupt").addEventListener("click", () => current && current.interrupt());
    $("close-session").addEventListener("click", () => current && current.close());
    window.addEventListener("hashchange", route);
    if (token()) enter();
    else signOut("");
  }

  init();
})();
