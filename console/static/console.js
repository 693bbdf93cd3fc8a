// The console page: hash routes (#/, #/topics/<name>, #/groups, #/groups/<id>, #/schemas,
// #/schemas/<subject>[?version=<n>]) drawn from /api.
"use strict";

const state = {session: null, timer: null, route: null};
const $ = (sel, root = document) => root.querySelector(sel);

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

class ApiFailure extends Error {
  constructor(status, error, message) { super(message); this.status = status; this.error = error; }
}

async function api(method, path, body) {
  const init = {method, headers: {}, credentials: "same-origin"};
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  if (method !== "GET") init.headers["X-Console"] = "1";
  const res = await fetch("/api/" + path, init);
  let data = null;
  try { data = await res.json(); } catch (e) { data = null; }
  if (!res.ok) {
    if (res.status === 401 && data && data.error === "LOGIN_REQUIRED") { state.session = null; route(); }
    throw new ApiFailure(res.status, data ? data.error : "HTTP_" + res.status,
                         data ? data.message : res.statusText);
  }
  return data;
}

function errorBox(err) {
  return h("div", {class: "error", id: "error", role: "alert"},
           h("b", {}, err.error || "ERROR"), ": ", err.message || String(err));
}

function notice(text, ok = false) {
  const el = $("#notice");
  el.textContent = text;
  el.className = ok ? "notice ok" : "notice";
  el.hidden = false;
}

function clearNotice() { $("#notice").hidden = true; }

function fmtBytes(n) {
  if (n === null || n === undefined) return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + units[i];
}

function fmtRate(r) { return r === null || r === undefined ? "—" : (r < 10 ? r.toFixed(1) : Math.round(r)) + "/s"; }
function enc(s) { return encodeURIComponent(s); }

function table(headers, rows, attrs) {
  return h("table", attrs || {},
    h("thead", {}, h("tr", {}, headers.map(c => h("th", {class: /^#|size|rate|offset|lag|count/i.test(c) ? "num" : null}, c)))),
    h("tbody", {}, rows));
}

function writable() { return state.session && !state.session.read_only; }

function every(ms, fn) {
  stopTimer();
  state.timer = setInterval(fn, ms);
}
function stopTimer() { if (state.timer) clearInterval(state.timer); state.timer = null; }

// -- routing ------------------------------------------------------------------------------------

async function route() {
  stopTimer();
  clearNotice();
  const main = $("#main");
  if (!state.session) {
    try { state.session = await api("GET", "session"); }
    catch (err) { main.replaceChildren(errorBox(err)); return; }
  }
  const s = state.session;
  $("#mode").textContent = s.read_only ? "read-only" : "read-write";
  $("#who").replaceChildren();
  if (s.login_required && !s.user) { renderLogin(main); return; }
  if (s.user) {
    $("#who").append("signed in as " + s.user,
      h("button", {onclick: async () => { await api("POST", "logout"); state.session = null; route(); }}, "Log out"));
  }
  const hash = decodeURIComponent(location.hash.replace(/^#/, "")) || "/";
  const [path, query] = hash.split("?");
  const params = new URLSearchParams(query || "");
  const parts = path.split("/").filter(Boolean);
  $("#nav-schemas").hidden = !s.schema_registry;
  const section = parts[0] === "groups" || parts[0] === "schemas" ? parts[0] : "overview";
  for (const a of document.querySelectorAll("header nav a")) a.classList.toggle("active", a.dataset.nav === section);
  main.replaceChildren(h("p", {class: "muted"}, "Loading…"));
  try {
    if (parts.length === 0) await renderOverview(main);
    else if (parts[0] === "topics" && parts.length >= 2) await renderTopic(main, parts.slice(1).join("/"), params);
    else if (parts[0] === "groups" && parts.length === 1) await renderGroups(main);
    else if (parts[0] === "groups") await renderGroup(main, parts.slice(1).join("/"));
    else if (parts[0] === "schemas" && parts.length === 1) await renderSchemas(main, params);
    else if (parts[0] === "schemas") await renderSubject(main, parts.slice(1).join("/"), params);
    else main.replaceChildren(errorBox({error: "NOT_FOUND", message: `No page at #${hash}`}));
  } catch (err) {
    main.replaceChildren(h("h1", {}, parts.length > 1 ? parts.slice(1).join("/") : "kafka-wire"), errorBox(err));
  }
}

function renderLogin(main) {
  const user = h("input", {name: "username", autocomplete: "username", required: true});
  const pass = h("input", {name: "password", type: "password", autocomplete: "current-password", required: true});
  const out = h("div");
  const form = h("form", {class: "card login", id: "login", onsubmit: async e => {
    e.preventDefault();
    try {
      await api("POST", "login", {username: user.value, password: pass.value});
      state.session = null;
      route();
    } catch (err) { out.replaceChildren(errorBox(err)); }
  }}, h("h1", {}, "Log in"),
     h("p", {class: "muted"}, "This broker has SASL users: log in with a SCRAM user name and password."),
     h("label", {}, "User ", user), h("label", {}, "Password ", pass),
     h("button", {class: "primary", type: "submit"}, "Log in"), out);
  main.replaceChildren(form);
}

// -- overview -----------------------------------------------------------------------------------

async function renderOverview(main) {
  const draw = async () => {
    const o = await api("GET", "overview");
    const partitions = o.topics.reduce((n, t) => n + t.partitions, 0);
    const body = [
      h("h1", {}, "Cluster ", h("span", {class: "muted"}, o.cluster_id)),
      h("section", {class: "card stats"},
        h("div", {}, h("b", {id: "broker-count"}, o.brokers.length), "brokers"),
        h("div", {}, h("b", {}, o.controller), "controller"),
        h("div", {}, h("b", {id: "topic-count"}, o.topics.length), "topics"),
        h("div", {}, h("b", {}, partitions), "partitions"),
        h("div", {}, h("b", {id: "under-replicated-count", class: o.under_replicated.length ? "tag warn" : null},
                       o.under_replicated.length), "under-replicated partitions")),
      h("h2", {}, "Brokers"),
      table(["id", "host", "port", "rack", ""], o.brokers.map(b => h("tr", {},
        h("td", {}, b.id), h("td", {}, b.host), h("td", {}, b.port), h("td", {}, b.rack || "—"),
        h("td", {}, b.id === o.controller ? h("span", {class: "tag"}, "controller") : "")))),
      h("h2", {}, "Topics"),
      table(["topic", "partitions #", "size", "messages/s rate", "last 10 min"], o.topics.map(t => h("tr", {"data-topic": t.name},
        h("td", {}, h("a", {href: "#/topics/" + enc(t.name)}, t.name), t.internal ? [" ", h("span", {class: "tag"}, "internal")] : null),
        h("td", {class: "num"}, t.partitions), h("td", {class: "num"}, fmtBytes(t.size)),
        h("td", {class: "num"}, fmtRate(t.rate)), h("td", {}, sparkline(t.rates))))),
      h("h2", {}, "Under-replicated partitions"),
      o.under_replicated.length
        ? table(["topic", "partition", "leader", "replicas", "isr"], o.under_replicated.map(u => h("tr", {},
            h("td", {}, u.topic), h("td", {}, u.partition), h("td", {}, u.leader),
            h("td", {}, u.replicas.join(",")), h("td", {}, u.isr.join(",")))))
        : h("p", {class: "muted", id: "no-under-replicated"}, "None: every partition's replicas are in sync."),
    ];
    if (writable()) body.push(createTopicForm());
    const keep = $("#create-topic");
    main.replaceChildren(...body);
    if (keep) main.replaceChild(keep, $("#create-topic"));
    return o;
  };
  const o = await draw();
  every(Math.max(2000, o.sample_interval_ms), () => draw().catch(err => notice(err.message)));
}

function createTopicForm() {
  const name = h("input", {name: "name", required: true, placeholder: "topic name"});
  const parts = h("input", {name: "partitions", type: "number", min: 1, value: 1, style: "width:6em"});
  return h("section", {class: "card", id: "create-topic"}, h("h2", {}, "Create a topic"),
    h("form", {class: "inline", onsubmit: async e => {
      e.preventDefault();
      try {
        await api("POST", "topics", {name: name.value, partitions: Number(parts.value), replication_factor: -1});
        notice(`Created topic ${name.value}`, true);
        location.hash = "#/topics/" + enc(name.value);
      } catch (err) { notice(`${err.error}: ${err.message}`); }
    }}, h("label", {}, "name", name), h("label", {}, "partitions", parts),
       h("button", {class: "primary", type: "submit"}, "Create")));
}

// -- a topic ------------------------------------------------------------------------------------

// A key or value in the Schema Registry's wire format, as the broker decoded it: the schema it
// names, then the record as JSON; bytes that did not decode are shown in hex under a note.
function schemaPayload(field) {
  const s = field.schema;
  const about = [`schema id ${s.id}`, s.subject ? `${s.subject}${s.version ? " v" + s.version : ""}` : null,
                 s.type, s.name].filter(x => x).join(" · ");
  if (s.error === undefined) {
    return h("div", {class: "decoded", "data-schema-id": s.id}, h("div", {class: "muted schema-about"}, about),
             h("pre", {class: "payload"}, JSON.stringify(s.value, null, 2)));
  }
  return h("div", {class: "undecoded", "data-schema-id": s.id},
           h("div", {class: "tag warn schema-note", title: s.error}, `${s.message}: shown in hex`),
           payload(field, "hex"));
}

function payload(field, format) {
  if (field === null || field === undefined) return h("span", {class: "muted"}, "null");
  if (format === "schema" && field.schema) return schemaPayload(field);
  let text;
  if (format === "hex" || field.text === null) {
    const raw = atob(field.base64);
    text = Array.from(raw, c => c.charCodeAt(0).toString(16).padStart(2, "0")).join(" ");
  } else if (format === "json") {
    try { text = JSON.stringify(JSON.parse(field.text), null, 2); } catch (e) { text = field.text; }
  } else text = field.text;
  if (field.truncated) text += `\n… (${field.size} bytes, first 64 KiB shown)`;
  return h("pre", {class: "payload"}, text);
}

async function renderTopic(main, topic, params) {
  const t = await api("GET", "topics/" + enc(topic));
  const browser = h("section", {class: "card", id: "browser"});
  const body = [
    h("h1", {}, "Topic ", h("span", {id: "topic-name"}, t.name), t.internal ? [" ", h("span", {class: "tag"}, "internal")] : null),
    h("p", {class: "muted"}, "id ", t.topic_id, " · messages/s ", sparkline(t.rates)),
    h("h2", {}, "Partitions"),
    table(["partition", "leader", "replicas", "isr", "start offset", "end offset", "size"], t.partitions.map(p =>
      h("tr", {"data-partition": p.partition},
        h("td", {}, p.partition), h("td", {}, p.leader), h("td", {}, p.replicas.join(",")),
        h("td", {}, p.isr.join(","), p.isr.length < p.replicas.length ? [" ", h("span", {class: "tag warn"}, "under-replicated")] : null),
        h("td", {class: "num"}, p.start_offset ?? (p.error || "—")), h("td", {class: "num"}, p.end_offset ?? "—"),
        h("td", {class: "num"}, fmtBytes(p.size))))),
    h("h2", {}, "Messages"), browser,
  ];
  if (writable()) body.push(produceForm(t));
  body.push(h("h2", {}, "Configs"),
    t.configs === null ? errorBox({error: t.configs_error, message: "configs are not visible to this user"})
      : table(["name", "value", "source"], t.configs.map(c => h("tr", {"data-config": c.name},
          h("td", {title: c.doc || ""}, c.name), h("td", {}, c.sensitive ? "(sensitive)" : (c.value ?? "null")),
          h("td", {}, h("span", {class: "tag"}, c.source)))), {id: "configs"}));
  if (writable()) body.push(h("section", {class: "card"}, h("button", {class: "danger", id: "delete-topic", onclick: async () => {
    if (!confirm(`Delete topic ${t.name} and all its messages?`)) return;
    try { await api("DELETE", "topics/" + enc(t.name)); location.hash = "#/"; notice(`Deleted topic ${t.name}`, true); }
    catch (err) { notice(`${err.error}: ${err.message}`); }
  }}, "Delete topic")));
  main.replaceChildren(...body);
  messageBrowser(browser, t, params);
}

function messageBrowser(root, t, params) {
  const partition = h("select", {name: "partition"}, t.partitions.map(p => h("option", {value: p.partition}, p.partition)));
  partition.value = params.get("partition") || "0";
  const from = h("select", {name: "from"}, h("option", {value: "latest"}, "latest"),
                 h("option", {value: "offset"}, "offset"), h("option", {value: "timestamp"}, "timestamp"));
  const position = h("input", {name: "position", placeholder: "offset, or 2026-11-25T00:00:00Z", style: "width:16em"});
  if (params.get("offset")) { from.value = "offset"; position.value = params.get("offset"); }
  if (params.get("timestamp")) { from.value = "timestamp"; position.value = params.get("timestamp"); }
  const limit = h("input", {name: "limit", type: "number", min: 1, max: 500, value: 50, style: "width:5em"});
  const key = h("input", {name: "key", placeholder: "key contains", value: params.get("key") || ""});
  // With the registry, records written by its serializers are decoded by default (other bytes
  // are shown as JSON); "JSON", "UTF-8" and "hex" show the bytes as they are.
  const format = h("select", {name: "format"},
                   state.session && state.session.schema_registry ? h("option", {value: "schema"}, "Schema Registry") : null,
                   h("option", {value: "json"}, "JSON"),
                   h("option", {value: "utf8"}, "UTF-8"), h("option", {value: "hex"}, "hex"));
  const tail = h("input", {type: "checkbox", name: "tail"});
  const out = h("div", {id: "messages"});
  let rows = [], next = null, tailTimer = null;

  const draw = (answer) => {
    const shown = rows.slice(-500);
    out.replaceChildren(
      h("p", {class: "muted", id: "browser-status"},
        `partition ${answer.partition}: offsets ${answer.start_offset}–${answer.end_offset} (end), `,
        `${shown.length} message${shown.length === 1 ? "" : "s"} shown`, answer.key ? ` with key containing “${answer.key}”` : "",
        tail.checked ? " · live" : ""),
      shown.length ? table(["offset", "timestamp", "key", "value", "headers"], shown.map(m => h("tr", {"data-offset": m.offset},
        h("td", {class: "num"}, m.offset),
        h("td", {title: m.timestamp_type}, new Date(m.timestamp).toISOString()),
        h("td", {}, payload(m.key, format.value)), h("td", {}, payload(m.value, format.value)),
        h("td", {}, m.headers.map(hd => h("div", {}, h("b", {}, hd.key), ": ", payload(hd.value, format.value))))))) :
        h("p", {class: "muted"}, "No messages here."),
      answer.scanned_to_end || tail.checked ? null : h("p", {},
        h("button", {id: "read-on", onclick: () => { from.value = "offset"; position.value = answer.next_offset; load(); }},
          `Read on from offset ${answer.next_offset}`),
        answer.key ? h("span", {class: "muted"}, ` (searched up to offset ${answer.next_offset - 1})`) : null));
  };
  let last = null;
  const load = async () => {
    const q = new URLSearchParams({partition: partition.value, limit: limit.value});
    if (from.value !== "latest") q.set(from.value, position.value);
    if (key.value) q.set("key", key.value);
    try {
      last = await api("GET", `topics/${enc(t.name)}/messages?${q}`);
      rows = last.messages; next = last.next_offset;
      draw(last);
    } catch (err) { rows = []; out.replaceChildren(errorBox(err)); }
  };
  const poll = async () => {
    if (next === null) return;
    const q = new URLSearchParams({partition: partition.value, offset: next, limit: 500});
    if (key.value) q.set("key", key.value);
    try {
      const a = await api("GET", `topics/${enc(t.name)}/messages?${q}`);
      rows = rows.concat(a.messages); next = a.next_offset;
      last = Object.assign({}, a, {start_offset: a.start_offset});
      draw(last);
    } catch (err) { out.replaceChildren(errorBox(err)); }
  };
  tail.addEventListener("change", () => {
    if (tailTimer) clearInterval(tailTimer);
    tailTimer = tail.checked ? setInterval(() => { if (!document.body.contains(root)) clearInterval(tailTimer); else poll(); }, 1000) : null;
    if (last) draw(last);
  });
  format.addEventListener("change", () => last && draw(last));
  root.replaceChildren(h("form", {class: "inline", id: "browse", onsubmit: e => { e.preventDefault(); load(); }},
    h("label", {}, "partition", partition), h("label", {}, "from", from), h("label", {}, "offset / time", position),
    h("label", {}, "limit", limit), h("label", {}, "key", key), h("label", {}, "show as", format),
    h("button", {class: "primary", type: "submit"}, "Read"), h("label", {}, "live tail", tail)), out);
  load();
}

function produceForm(t) {
  const partition = h("select", {name: "partition"}, t.partitions.map(p => h("option", {value: p.partition}, p.partition)));
  const key = h("input", {name: "key", placeholder: "key (optional)"});
  const value = h("textarea", {name: "value", rows: 2, cols: 40, placeholder: "value"});
  return h("section", {class: "card", id: "produce"}, h("h2", {}, "Produce a test message"),
    h("form", {class: "inline", onsubmit: async e => {
      e.preventDefault();
      try {
        const r = await api("POST", `topics/${enc(t.name)}/messages`,
                            {partition: Number(partition.value), key: key.value || null, value: value.value});
        notice(`Produced to ${t.name}-${r.partition} at offset ${r.offset}`, true);
      } catch (err) { notice(`${err.error}: ${err.message}`); }
    }}, h("label", {}, "partition", partition), h("label", {}, "key", key), h("label", {}, "value", value),
       h("button", {class: "primary", type: "submit"}, "Produce")));
}

// -- consumer groups ----------------------------------------------------------------------------

async function renderGroups(main) {
  const draw = async () => {
    const g = await api("GET", "groups");
    main.replaceChildren(h("h1", {}, "Consumer groups"),
      g.groups.length ? table(["group", "state", "type", "protocol", "lag"], g.groups.map(x => h("tr", {"data-group": x.group_id},
        h("td", {}, h("a", {href: "#/groups/" + enc(x.group_id)}, x.group_id)), h("td", {}, x.state), h("td", {}, x.type),
        h("td", {}, x.protocol_type || "—"), h("td", {class: "num"}, x.lag ?? "—"))))
        : h("p", {class: "muted"}, "No consumer groups."));
  };
  await draw();
  every(5000, () => draw().catch(err => notice(err.message)));
}

const COLORS = ["#2463eb", "#e8590c", "#2f9e44", "#ae3ec9", "#0c8599", "#f08c00"];

async function renderGroup(main, groupId) {
  let resetForm = null;
  const draw = async () => {
    const g = await api("GET", "groups/" + enc(groupId));
    const series = [{name: "total", points: g.lag_history.map(s => [s.time, s.lag]), color: "#17202e"}];
    const parts = [...new Set(g.lag_history.flatMap(s => Object.keys(s.partitions)))].sort();
    if (parts.length > 1 && parts.length <= COLORS.length) {
      parts.forEach((p, i) => series.push({name: p, color: COLORS[i],
        points: g.lag_history.filter(s => p in s.partitions).map(s => [s.time, s.partitions[p]])}));
    }
    const chart = lineChart(series, {label: `lag of ${g.group_id} over time`});
    chart.id = "lag-chart";
    const body = [
      h("h1", {}, "Group ", h("span", {id: "group-id"}, g.group_id)),
      h("section", {class: "card stats"},
        h("div", {}, h("b", {id: "group-state"}, g.state), "state"),
        h("div", {}, h("b", {}, g.protocol_type || "—"), "protocol type"),
        h("div", {}, h("b", {}, g.protocol || "—"), "protocol / assignor"),
        h("div", {}, h("b", {}, g.members.length), "members"),
        h("div", {}, h("b", {id: "lag-total"}, g.lag_total), "total lag")),
      h("h2", {}, "Lag over time"),
      h("section", {class: "card"}, chart, series.length > 1 ? h("p", {class: "muted"}, series.map(s =>
        h("span", {style: `color:${s.color};margin-right:12px`}, "■ ", s.name))) : null),
      h("h2", {}, "Members"),
      g.members.length ? table(["member", "client id", "host", "assignment"], g.members.map(m => h("tr", {},
        h("td", {}, m.member_id, m.instance_id ? [" ", h("span", {class: "tag"}, "static " + m.instance_id)] : null),
        h("td", {}, m.client_id), h("td", {}, m.host),
        h("td", {}, m.assignment === null ? "—" : m.assignment.map(a => `${a.topic}: ${a.partitions.join(",")}`).join("; ")))))
        : h("p", {class: "muted"}, "No active members."),
      ...(g.protocol_type === "share" ? sharePartitions(g) : [
      h("h2", {}, "Committed offsets"),
      table(["topic", "partition", "committed offset", "end offset", "lag"], g.offsets.map(o => h("tr", {"data-tp": `${o.topic}:${o.partition}`},
        h("td", {}, h("a", {href: "#/topics/" + enc(o.topic)}, o.topic)), h("td", {}, o.partition),
        h("td", {class: "num"}, o.committed), h("td", {class: "num"}, o.end_offset ?? "—"), h("td", {class: "num lag"}, o.lag ?? "—"))))]),
    ];
    if (writable() && g.protocol_type !== "share") {
      resetForm = resetForm || offsetsResetForm(g);
      body.push(resetForm);
    }
    main.replaceChildren(...body);
    return g;
  };
  const g = await draw();
  every(Math.max(1000, g.sample_interval_ms), () => draw().catch(err => notice(err.message)));
}

// A share group (KIP-932): its share-partitions, as kafka-share-groups --describe --offsets shows them,
// with the records in flight (fetched and not yet acknowledged, or released for redelivery).
function sharePartitions(g) {
  return [h("h2", {}, "Share-partitions"),
    g.offsets.length ? table(["topic", "partition", "start offset", "end offset", "in flight", "lag"], g.offsets.map(o =>
      h("tr", {"data-tp": `${o.topic}:${o.partition}`},
        h("td", {}, h("a", {href: "#/topics/" + enc(o.topic)}, o.topic)), h("td", {}, o.partition),
        h("td", {class: "num"}, o.start_offset), h("td", {class: "num"}, o.end_offset ?? "—"),
        h("td", {class: "num in-flight"}, o.in_flight ?? "—"), h("td", {class: "num lag"}, o.lag ?? "—"))))
      : h("p", {class: "muted"}, "No share-partition state yet: no member has fetched.")];
}

function offsetsResetForm(g) {
  const topics = [...new Set(g.offsets.map(o => o.topic))];
  const topic = h("input", {name: "topic", value: topics[0] || "", list: "group-topics"});
  const to = h("select", {name: "to"}, ["earliest", "latest", "offset", "timestamp"].map(v => h("option", {value: v}, v)));
  const value = h("input", {name: "value", placeholder: "offset or time"});
  return h("section", {class: "card", id: "reset-offsets"}, h("h2", {}, "Reset offsets"),
    h("p", {class: "muted"}, "As kafka-consumer-groups --reset-offsets: the group must have no active members."),
    h("datalist", {id: "group-topics"}, topics.map(t => h("option", {value: t}))),
    h("form", {class: "inline", onsubmit: async e => {
      e.preventDefault();
      const body = {topic: topic.value, to: to.value};
      if (to.value === "offset") body.offset = value.value;
      if (to.value === "timestamp") body.timestamp = value.value;
      try {
        const r = await api("POST", `groups/${enc(g.group_id)}/offsets`, body);
        notice(`Reset ${r.group_id} on ${r.topic}: ` + r.offsets.map(o => `${o.partition}→${o.offset}`).join(", "), true);
      } catch (err) { notice(`${err.error}: ${err.message}`); }
    }}, h("label", {}, "topic", topic), h("label", {}, "to", to), h("label", {}, "value", value),
       h("button", {class: "primary", type: "submit"}, "Reset")));
}

// -- the Schema Registry ------------------------------------------------------------------------

function setting(own, inForce) {
  if (own) return h("span", {}, own, " ", h("span", {class: "tag"}, "subject"));
  return inForce ? h("span", {class: "muted"}, inForce, " (global)") : h("span", {class: "muted"}, "global");
}

async function renderSchemas(main, params) {
  const deleted = params.get("deleted") === "true";
  const r = await api("GET", "registry" + (deleted ? "?deleted=true" : ""));
  const toggle = h("label", {}, h("input", {type: "checkbox", id: "show-deleted", checked: deleted || null,
    onchange: e => { location.hash = "#/schemas" + (e.target.checked ? "?deleted=true" : ""); }}), " show soft-deleted subjects");
  main.replaceChildren(...[
    h("h1", {}, "Schema Registry"),
    h("section", {class: "card stats"},
      h("div", {}, h("b", {id: "global-compatibility"}, r.compatibility ?? "—"), "compatibility (global)"),
      h("div", {}, h("b", {id: "global-mode"}, r.mode ?? "—"), "mode (global)"),
      h("div", {}, h("b", {id: "subject-count"}, r.subjects.length), "subjects"),
      r.contexts && r.contexts.length > 1 ? h("div", {}, h("b", {id: "contexts"}, r.contexts.join(" ")), "contexts") : null,
      h("div", {}, h("b", {}, r.types.join(", ")), "schema types")),
    r.global_visible ? null : h("p", {class: "muted"}, "The global settings are the super users' to read."),
    h("p", {}, toggle),
    r.subjects.length ? table(["subject", "type", "latest version #", "latest id #", "versions #", "compatibility", "mode"],
      r.subjects.map(x => h("tr", {"data-subject": x.subject},
        h("td", {}, h("a", {href: "#/schemas/" + enc(x.subject)}, x.subject), x.deleted ? [" ", h("span", {class: "tag warn"}, "deleted")] : null),
        h("td", {}, x.schema_type), h("td", {class: "num"}, x.latest_version), h("td", {class: "num"}, x.latest_id),
        h("td", {class: "num"}, x.versions), h("td", {}, setting(x.compatibility, r.compatibility)),
        h("td", {}, setting(x.mode, r.mode)))), {id: "subjects"})
      : h("p", {class: "muted", id: "no-subjects"}, "No subjects registered.")].filter(Boolean));
}

async function renderSubject(main, subject, params) {
  const s = await api("GET", "registry/subjects/" + enc(subject));
  const wanted = params.get("version");
  const shown = wanted ? await api("GET", `registry/subjects/${enc(subject)}/versions/${enc(wanted)}`) : s.latest;
  const link = v => "#/schemas/" + enc(subject) + "?version=" + v;
  main.replaceChildren(...[
    h("h1", {}, "Subject ", h("span", {id: "subject-name"}, s.subject), s.deleted ? [" ", h("span", {class: "tag warn"}, "deleted")] : null),
    h("section", {class: "card stats"},
      h("div", {}, h("b", {id: "subject-compatibility"}, s.compatibility.effective), s.compatibility.subject ? "compatibility (subject)" : "compatibility (global)"),
      h("div", {}, h("b", {id: "subject-mode"}, s.mode.effective), s.mode.subject ? "mode (subject)" : "mode (global)"),
      h("div", {}, h("b", {}, s.versions.length), "versions")),
    h("h2", {}, "Versions"),
    table(["version #", "schema id #", "type", "references", ""], s.versions.map(v => h("tr", {"data-version": v.version},
      h("td", {class: "num"}, h("a", {href: link(v.version)}, v.version)), h("td", {class: "num"}, v.id), h("td", {}, v.schema_type),
      h("td", {}, v.references.map(r => `${r.name} → ${r.subject} v${r.version}`).join("; ") || "—"),
      h("td", {}, v.deleted ? h("span", {class: "tag warn"}, "soft-deleted") : null))), {id: "versions"}),
    shown ? h("h2", {}, `Version ${shown.version} · schema id ${shown.id} · ${shown.schema_type}`,
              shown.deleted ? [" ", h("span", {class: "tag warn"}, "soft-deleted")] : null) : null,
    shown ? h("section", {class: "card"},
      shown.referenced_by.length ? h("p", {class: "muted"}, "Referenced by schema ids ", shown.referenced_by.join(", ")) : null,
      h("pre", {class: "payload schema", id: "schema-text"}, shown.pretty))
      : h("p", {class: "muted"}, "Every version is soft-deleted: pick one above.")].filter(Boolean));
}

window.addEventListener("hashchange", route);
window.addEventListener("DOMContentLoaded", route);
