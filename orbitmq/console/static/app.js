// OrbitMQ console: a small single-page app over the JSON API under /api.
// Pages are rebuilt from the hash (#/page?params); every list is paged by the server.
"use strict";

const main = () => document.getElementById("main");
let session = { loginRequired: false, loggedIn: true, admin: true, accessKey: "" };
let timers = [];

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "text") el.textContent = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function status(text, kind) {
  const el = document.getElementById("status");
  el.textContent = text || "";
  el.className = text ? kind : "";
}

async function call(method, path, body) {
  const opts = { method, headers: {} };
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const res = await fetch(path, opts);
  let data = null;
  try { data = await res.json(); } catch (e) { data = { error: res.statusText }; }
  if (res.status === 401 && session.loginRequired) { session.loggedIn = false; showLogin(); }
  if (!res.ok) throw new Error((data && data.error) || res.statusText);
  return data;
}

const get = (path, params) => call("GET", path + (params ? "?" + new URLSearchParams(params) : ""));
const enc = encodeURIComponent;

function fmtTime(ms) {
  if (!ms) return "-";
  const d = new Date(ms);
  const p = (n, w = 2) => String(n).padStart(w, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

function table(headers, rows, caption) {
  return h("div", { class: "table-wrap" },
    h("table", {}, caption ? h("caption", { class: "muted" }, caption) : null,
      h("thead", {}, h("tr", {}, headers.map((x) => h("th", { scope: "col" }, x)))),
      h("tbody", {}, rows.length ? rows.map((r) => h("tr", {}, r.map((c) =>
        h("td", { class: typeof c === "number" ? "num" : null }, c))))
        : h("tr", {}, h("td", { colspan: headers.length, class: "muted" }, "Nothing to show.")))));
}

function pager(data, go) {
  const pages = Math.max(1, Math.ceil(data.total / data.size));
  return h("div", { class: "pager" },
    h("button", { class: "secondary", disabled: data.page <= 0, onclick: () => go(data.page - 1) }, "Previous"),
    h("span", {}, `Page ${data.page + 1} of ${pages} (${data.total} in all)`),
    h("button", { class: "secondary", disabled: data.page + 1 >= pages, onclick: () => go(data.page + 1) }, "Next"));
}

function writeButton(label, onclick, cls) {
  return h("button", { class: cls || null, disabled: !session.admin,
    title: session.admin ? null : "read-only account", onclick }, label);
}

async function act(fn, okText) {
  status("Working…", "");
  try { const r = await fn(); status(okText || "Done.", "ok"); return r; }
  catch (e) { status(e.message, "error"); return null; }
}

function field(label, input) { return h("label", {}, label, input); }

function route() {
  const hash = location.hash.replace(/^#\/?/, "") || "cluster";
  const [page, query] = hash.split("?");
  return { page, params: new URLSearchParams(query || "") };
}

function go(page, params) {
  const q = params ? "?" + new URLSearchParams(params) : "";
  location.hash = `#/${page}${q}`;
}

// --- cluster and live chart -------------------------------------------------------

function chart(canvas, series) {
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth, hgt = canvas.clientHeight;
  canvas.width = w * dpr; canvas.height = hgt * dpr;
  const ctx = canvas.getContext("2d");
  ctx.scale(dpr, dpr);
  const css = getComputedStyle(document.documentElement);
  const max = Math.max(1, ...series.flatMap((s) => s.values));
  ctx.fillStyle = css.getPropertyValue("--muted");
  ctx.font = "12px system-ui";
  ctx.fillText(max.toFixed(1), 4, 12);
  series.forEach((s) => {
    ctx.strokeStyle = css.getPropertyValue(s.color);
    ctx.lineWidth = 2;
    ctx.beginPath();
    s.values.forEach((v, i) => {
      const x = (i / Math.max(1, s.values.length - 1)) * (w - 8) + 4;
      const y = hgt - 6 - (v / max) * (hgt - 24);
      if (i) ctx.lineTo(x, y); else ctx.moveTo(x, y);
    });
    ctx.stroke();
  });
}

async function pageCluster() {
  const data = await get("/api/cluster");
  const rows = data.brokers.map((b) => [b.cluster, b.brokerName, b.brokerId, b.role, b.addr,
    b.runtime.brokerVersionDesc || "-", b.runtime.putTps || "-", b.runtime.getTransferedTps || "-",
    b.runtime.msgPutTotalTodayNow || "-", b.runtime.commitLogDiskRatio || "-", b.error || "ok"]);
  const canvas = h("canvas", { role: "img", "aria-label": "Messages in and out per second" });
  const history = { in: [], out: [] };
  const summary = h("p", { class: "muted" });
  main().replaceChildren(h("h2", {}, "Cluster"),
    table(["Cluster", "Broker", "ID", "Role", "Address", "Version", "Put TPS", "Get TPS", "Put today", "Disk ratio", "Status"], rows),
    h("h3", {}, "Live rates"),
    h("div", { class: "legend" }, h("span", { class: "in" }, "— in (put TPS)"), h("span", { class: "out" }, "— out (get TPS)")),
    canvas, summary);
  const tick = async () => {
    try {
      const d = await get("/api/cluster");
      const sum = (k) => d.brokers.reduce((a, b) => a + (parseFloat(b.runtime[k]) || 0), 0);
      history.in.push(sum("putTps")); history.out.push(sum("getTransferedTps"));
      for (const k of ["in", "out"]) if (history[k].length > 60) history[k].shift();
      chart(canvas, [{ values: history.in, color: "--accent" }, { values: history.out, color: "--chart2" }]);
      summary.textContent = `in ${history.in.at(-1).toFixed(2)}/s, out ${history.out.at(-1).toFixed(2)}/s, sampled ${fmtTime(Date.now())}`;
    } catch (e) { summary.textContent = e.message; }
  };
  await tick();
  timers.push(setInterval(tick, 3000));
}

// --- topics -------------------------------------------------------------------------

async function pageTopics(params) {
  const page = parseInt(params.get("page") || "0", 10);
  const q = params.get("q") || "", kind = params.get("kind") || "normal";
  const data = await get("/api/topics", { q, kind, page, size: 20 });
  const search = h("input", { name: "q", value: q, type: "search", "aria-label": "Filter topics" });
  const kindSel = h("select", { name: "kind" }, ["normal", "retry", "dlq", "system", "all"].map((k) =>
    h("option", { value: k, selected: k === kind }, k)));
  const name = h("input", { name: "topic", required: true, placeholder: "TopicName" });
  const r = h("input", { name: "readQueueNums", type: "number", min: 1, max: 1024, value: 8 });
  const w = h("input", { name: "writeQueueNums", type: "number", min: 1, max: 1024, value: 8 });
  const perm = h("select", { name: "perm" }, [["6", "RW-"], ["4", "R--"], ["2", "-W-"], ["7", "RWX"]].map(([v, t]) => h("option", { value: v }, t)));
  main().replaceChildren(h("h2", {}, "Topics"),
    h("form", { role: "search", onsubmit: (e) => { e.preventDefault(); go("topics", { q: search.value, kind: kindSel.value }); } },
      field("Name contains", search), field("Kind", kindSel), h("button", { type: "submit" }, "Search")),
    table(["Topic", "Kind"], data.items.map((t) => [h("a", { href: `#/topic?name=${enc(t.topic)}` }, t.topic), t.kind])),
    pager(data, (p) => go("topics", { q, kind, page: p })),
    h("h3", {}, "Create or update a topic"),
    h("form", { id: "create-topic", onsubmit: async (e) => {
      e.preventDefault();
      const ok = await act(() => call("PUT", `/api/topics/${enc(name.value)}`, {
        readQueueNums: +r.value, writeQueueNums: +w.value, perm: +perm.value }), `Topic ${name.value} saved.`);
      if (ok) go("topic", { name: name.value });
    } }, field("Topic", name), field("Read queues", r), field("Write queues", w), field("Permission", perm),
    writeButton("Save topic", null)));
  main().querySelector("#create-topic button").type = "submit";
}

async function pageTopic(params) {
  const name = params.get("name");
  const t = await get(`/api/topics/${enc(name)}`);
  const qd = t.queueDatas[0] || { readQueueNums: 8, writeQueueNums: 8, perm: 6 };
  const r = h("input", { type: "number", min: 1, max: 1024, value: qd.readQueueNums });
  const w = h("input", { type: "number", min: 1, max: 1024, value: qd.writeQueueNums });
  const perm = h("input", { type: "number", min: 0, max: 7, value: qd.perm });
  main().replaceChildren(h("h2", {}, `Topic ${t.topic}`),
    h("p", {}, `${t.messages} message(s) stored. `, h("a", { href: `#/messages?topic=${enc(t.topic)}` }, "Browse messages")),
    h("h3", {}, "Route"),
    table(["Broker", "Cluster", "Addresses"], t.brokers.map((b) => [b.brokerName, b.cluster,
      Object.entries(b.addrs).map(([id, a]) => `${id}=${a}`).join(", ")])),
    table(["Broker", "Read queues", "Write queues", "Perm"], t.queueDatas.map((q) => [q.brokerName, q.readQueueNums, q.writeQueueNums, q.permText])),
    h("h3", {}, "Queues"),
    table(["Broker", "Queue", "Min offset", "Max offset", "Last stored"], t.queues.map((q) =>
      [q.brokerName, q.queueId, q.minOffset, q.maxOffset, fmtTime(q.lastUpdateTimestamp)])),
    h("h3", {}, "Change"),
    h("form", { onsubmit: async (e) => {
      e.preventDefault();
      if (await act(() => call("PUT", `/api/topics/${enc(name)}`, { readQueueNums: +r.value, writeQueueNums: +w.value, perm: +perm.value }), "Topic updated.")) render();
    } }, field("Read queues", r), field("Write queues", w), field("Perm (4 R, 2 W, 1 X)", perm),
      writeButton("Update", null)),
    h("p", {}, writeButton("Delete topic", async () => {
      if (!confirm(`Delete topic ${name}?`)) return;
      if (await act(() => call("DELETE", `/api/topics/${enc(name)}`), `Topic ${name} deleted.`)) go("topics");
    }, "danger")));
  main().querySelector("form button").type = "submit";
}

// --- consumer groups ----------------------------------------------------------------

async function pageGroups(params) {
  const page = parseInt(params.get("page") || "0", 10), q = params.get("q") || "";
  const data = await get("/api/groups", { q, page, size: 20 });
  const search = h("input", { type: "search", value: q, "aria-label": "Filter groups" });
  main().replaceChildren(h("h2", {}, "Consumer groups"),
    h("form", { role: "search", onsubmit: (e) => { e.preventDefault(); go("groups", { q: search.value }); } },
      field("Name contains", search), h("button", { type: "submit" }, "Search")),
    table(["Group", "Online clients", "Lag", "Consume TPS"], data.items.map((g) =>
      [h("a", { href: `#/group?name=${enc(g.group)}` }, g.group), g.online, g.lag, g.consumeTps.toFixed(2)])),
    pager(data, (p) => go("groups", { q, page: p })));
}

async function pageGroup(params) {
  const name = params.get("name");
  const g = await get(`/api/groups/${enc(name)}`);
  const topics = [...new Set([...Object.keys(g.subscriptions), ...g.queues.map((q) => q.topic)])].filter((t) => !t.startsWith("%RETRY%"));
  const topicSel = h("select", { "aria-label": "Topic" }, topics.map((t) => h("option", { value: t }, t)));
  const when = h("input", { type: "datetime-local", step: 1, "aria-label": "Reset to time" });
  const lagCanvas = h("canvas", { role: "img", "aria-label": "Lag of the group over time" });
  const lagHistory = [];
  main().replaceChildren(h("h2", {}, `Consumer group ${g.group}`),
    h("p", {}, `Model ${g.messageModel || "-"}, total lag ${g.lag}, consume TPS ${g.consumeTps.toFixed(2)}. `,
      h("a", { href: `#/dlq?group=${enc(g.group)}` }, "Dead letters")),
    h("h3", {}, "Online clients"),
    table(["Client ID", "Address", "Language", "Version"], g.clients.map((c) => [c.clientId, c.clientAddr, c.language, c.version])),
    h("h3", {}, "Subscriptions"),
    table(["Topic", "Expression"], Object.entries(g.subscriptions)),
    h("h3", {}, "Lag per queue"),
    table(["Topic", "Broker", "Queue", "Broker offset", "Consumer offset", "Lag", "Lag (s)"], g.queues.map((q) =>
      [q.topic, q.brokerName, q.queueId, q.brokerOffset, q.consumerOffset, q.lag, q.lagSeconds])),
    h("h3", {}, "Live lag"), lagCanvas,
    h("h3", {}, "Reset offsets"),
    h("form", { onsubmit: async (e) => {
      e.preventDefault();
      const ts = when.value ? new Date(when.value).getTime() : Date.now();
      if (await act(() => call("POST", `/api/groups/${enc(name)}/reset-offset`, { topic: topicSel.value, timestamp: ts }), "Offsets reset.")) render();
    } }, field("Topic", topicSel), field("To time", when), writeButton("Reset to time", null),
      writeButton("Skip backlog", async (e) => {
        e.preventDefault();
        if (await act(() => call("POST", `/api/groups/${enc(name)}/reset-offset`, { topic: topicSel.value, skipBacklog: true }), "Backlog skipped.")) render();
      }, "secondary")));
  main().querySelector("form button").type = "submit";
  const tick = async () => {
    try {
      const d = await get(`/api/groups/${enc(name)}`);
      lagHistory.push(d.lag); if (lagHistory.length > 60) lagHistory.shift();
      chart(lagCanvas, [{ values: lagHistory, color: "--chart2" }]);
    } catch (e) { /* shown on the next full render */ }
  };
  await tick();
  timers.push(setInterval(tick, 5000));
}

// --- messages -----------------------------------------------------------------------

function hex(b64) {
  const bin = atob(b64);
  const lines = [];
  for (let i = 0; i < bin.length; i += 16) {
    const bytes = [...bin.slice(i, i + 16)].map((c) => c.charCodeAt(0));
    lines.push(i.toString(16).padStart(8, "0") + "  " + bytes.map((b) => b.toString(16).padStart(2, "0")).join(" ").padEnd(48) +
      "  " + bytes.map((b) => (b >= 32 && b < 127 ? String.fromCharCode(b) : ".")).join(""));
  }
  return lines.join("\n");
}

function bodyView(m) {
  const pre = h("pre", { id: "body", tabindex: 0 });
  const modes = {
    Text: () => m.bodyText,
    JSON: () => { try { return JSON.stringify(JSON.parse(m.bodyText), null, 2); } catch (e) { return "(not JSON) " + e.message; } },
    Hex: () => hex(m.bodyBase64),
  };
  const tabs = h("div", { class: "tabs", role: "tablist", "aria-label": "Body format" });
  const show = (name) => {
    pre.textContent = modes[name]();
    for (const b of tabs.children) b.setAttribute("aria-selected", String(b.textContent === name));
  };
  for (const name of Object.keys(modes)) tabs.append(h("button", { role: "tab", type: "button", onclick: () => show(name) }, name));
  show("Text");
  return h("div", {}, tabs, pre);
}

async function messageDetail(m, into) {
  const groupIn = h("input", { placeholder: "consumer group", "aria-label": "Group to resend to" });
  const trace = h("div", { id: "trace" }, h("p", { class: "muted" }, "Loading trace…"));
  into.replaceChildren(h("div", { class: "detail", id: "message-detail" },
    h("h3", {}, `Message ${m.msgId}`),
    table(["Field", "Value"], [["Topic", m.topic], ["Tags", m.tags], ["Keys", m.keys.join(" ")],
      ["Queue", `${m.queueId} @ ${m.queueOffset}`], ["Offset message id", m.offsetMsgId],
      ["Born", `${fmtTime(m.bornTimestamp)} from ${m.bornHost}`], ["Stored", `${fmtTime(m.storeTimestamp)} on ${m.storeHost}`],
      ["Reconsume times", m.reconsumeTimes], ["Body size", m.bodySize]]),
    h("h3", {}, "Properties"), table(["Key", "Value"], Object.entries(m.properties)),
    h("h3", {}, "Body"), bodyView(m),
    h("h3", {}, "Trace"), trace,
    h("h3", {}, "Resend to a group"),
    h("form", { onsubmit: async (e) => {
      e.preventDefault();
      const r = await act(() => call("POST", `/api/messages/${enc(m.offsetMsgId)}/resend`, { group: groupIn.value }), "Resent.");
      if (r) status(`Resent through ${r.clientId}: ${JSON.stringify(r.result.consumeResult || r.result)}`, "ok");
    } }, field("Group", groupIn), writeButton("Resend", null))));
  into.querySelector("form button").type = "submit";
  into.querySelector("h3").scrollIntoView();
  try {
    const t = await get(`/api/messages/${enc(m.msgId)}/trace`);
    trace.replaceChildren(t.items.length ? table(["Type", "Group", "Client host", "Time", "Cost", "Status", "Retry"],
      t.items.map((x) => [x.type, x.group, x.clientHost, fmtTime(x.timestamp), x.type === "SubBefore" ? "-" : `${x.costMs} ms`,
        x.type === "SubBefore" ? "-" : (x.success ? "success" : "failed"), x.retryTimes]))
      : h("p", { class: "muted" }, `No trace of this message in ${t.traceTopic}.`));
  } catch (e) { trace.replaceChildren(h("p", {}, e.message)); }
}

function messageRows(items, into) {
  return table(["Message ID", "Tags", "Keys", "Queue", "Offset", "Stored", ""], items.map((m) => [
    m.msgId, m.tags, m.keys.join(" "), m.queueId, m.queueOffset, fmtTime(m.storeTimestamp),
    h("button", { class: "secondary", onclick: () => messageDetail(m, into) }, "Details")]));
}

function localInput(ms) {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60000);
  return d.toISOString().slice(0, 19);
}

async function pageMessages(params) {
  const topic = params.get("topic") || "", mode = params.get("mode") || "time";
  const topicIn = h("input", { name: "topic", value: topic, required: true, "aria-label": "Topic" });
  const modeSel = h("select", { name: "mode", "aria-label": "Search by" }, [["time", "Time range"], ["key", "Key"], ["id", "Message ID"]]
    .map(([v, t]) => h("option", { value: v, selected: v === mode }, t)));
  const valueIn = h("input", { name: "value", value: params.get("value") || "" });
  const now = Date.now();
  const begin = h("input", { type: "datetime-local", step: 1, value: params.get("begin") || localInput(now - 3600e3), "aria-label": "From" });
  const end = h("input", { type: "datetime-local", step: 1, value: params.get("end") || localInput(now + 60e3), "aria-label": "To" });
  const results = h("div", { id: "results" }), detail = h("div");
  main().replaceChildren(h("h2", {}, "Messages"),
    h("form", { id: "message-search", role: "search", onsubmit: (e) => {
      e.preventDefault();
      go("messages", { topic: topicIn.value, mode: modeSel.value, value: valueIn.value, begin: begin.value, end: end.value });
    } }, field("Topic", topicIn), field("Search by", modeSel), field("Key / ID", valueIn), field("From", begin), field("To", end),
      h("button", { type: "submit" }, "Search")),
    results, detail);
  if (!topic) return;
  let data;
  if (mode === "key") data = await get("/api/messages", { topic, key: params.get("value") || "" });
  else if (mode === "id") data = await get("/api/messages", { topic, msgId: params.get("value") || "" });
  else {
    const page = parseInt(params.get("page") || "0", 10);
    data = await get("/api/messages", { topic, begin: new Date(begin.value).getTime(), end: new Date(end.value).getTime(), page, size: 20 });
  }
  results.replaceChildren(messageRows(data.items, detail),
    data.total !== undefined ? pager(data, (p) => { params.set("page", p); go("messages", Object.fromEntries(params)); }) : "");
  if (data.items.length === 1) await messageDetail(data.items[0], detail);
}

// --- producers ---------------------------------------------------------------------

async function pageProducers(params) {
  const group = params.get("group") || "";
  const groupIn = h("input", { value: group, required: true });
  const results = h("div");
  main().replaceChildren(h("h2", {}, "Producers"),
    h("form", { role: "search", onsubmit: (e) => { e.preventDefault(); go("producers", { group: groupIn.value }); } },
      field("Producer group", groupIn), h("button", { type: "submit" }, "Show")),
    results);
  if (!group) return;
  const data = await get(`/api/producers/${enc(group)}`);
  results.replaceChildren(table(["Broker", "Client ID", "Address", "Language", "Version"],
    data.items.map((c) => [c.brokerName, c.clientId, c.clientAddr, c.language, c.version])));
}

// --- dead letters -------------------------------------------------------------------

async function pageDlq(params) {
  const group = params.get("group") || "";
  const groupIn = h("input", { value: group, required: true, "aria-label": "Consumer group" });
  const results = h("div"), detail = h("div");
  main().replaceChildren(h("h2", {}, "Dead letters"),
    h("form", { role: "search", onsubmit: (e) => { e.preventDefault(); go("dlq", { group: groupIn.value }); } },
      field("Consumer group", groupIn), h("button", { type: "submit" }, "Show")),
    results, detail);
  if (!group) return;
  const page = parseInt(params.get("page") || "0", 10);
  const data = await get(`/api/dlq/${enc(group)}`, { page, size: 20 });
  const checks = [];
  const rows = data.items.map((m) => {
    const cb = h("input", { type: "checkbox", value: m.offsetMsgId, "aria-label": `Select ${m.msgId}` });
    checks.push(cb);
    return [cb, m.msgId, m.originalTopic, m.keys.join(" "), m.attempts, m.error || "-", m.resent ? "yes" : "no", fmtTime(m.storeTimestamp),
      h("span", {}, h("button", { class: "secondary", onclick: () => messageDetail(m, detail) }, "Details"), " ",
        writeButton("Resend", () => resendDlq(group, [m.offsetMsgId])))];
  });
  results.replaceChildren(
    h("p", {}, `${data.total} dead letter(s) in %DLQ%${group}. `, h("a", { href: `/api/dlq/${enc(group)}/export`, download: `dlq-${group}.jsonl` }, "Export as JSON lines")),
    table(["", "Message ID", "Original topic", "Keys", "Attempts", "Error", "Resent", "Dead since", ""], rows),
    pager(data, (p) => go("dlq", { group, page: p })),
    h("p", {}, writeButton("Resend selected", () => resendDlq(group, checks.filter((c) => c.checked).map((c) => c.value)), "secondary"), " ",
      writeButton("Resend all", () => confirm(`Resend every dead letter of ${group}?`) && resendDlq(group, []))));
}

async function resendDlq(group, ids) {
  const r = await act(() => call("POST", `/api/dlq/${enc(group)}/resend`, { msgIds: ids }));
  if (r) {
    status(`Resent ${r.resent} of ${r.matched} dead letter(s), ${r.skipped} skipped as resent before: ` +
      Object.entries(r.targets).map(([id, topic]) => `${id} to ${topic}`).join(", "), "ok");
    render();
  }
}

// --- ACL ----------------------------------------------------------------------------

async function pageAcl() {
  const data = await get("/api/acl");
  main().replaceChildren(h("h2", {}, "ACL"), h("p", { class: "muted" }, "Read-only view; change accounts with orbitmq admin updateAclConfig."),
    ...data.brokers.map((b) => h("section", {}, h("h3", {}, `${b.brokerName} (${b.addr})`),
      b.error ? h("p", {}, b.error) : "",
      h("p", {}, `Global whitelist: ${b.globalWhiteAddrs.join(", ") || "none"}`),
      table(["Access key", "Admin", "Whitelist", "Default topic perm", "Default group perm", "Topic perms", "Group perms"],
        b.accounts.map((a) => [a.accessKey, String(!!a.admin), a.whiteRemoteAddress || "", a.defaultTopicPerm || "",
          a.defaultGroupPerm || "", (a.topicPerms || []).join(", "), (a.groupPerms || []).join(", ")])))));
}

// --- login and routing --------------------------------------------------------------

function showWho() {
  const who = document.getElementById("who");
  if (!session.loginRequired) { who.replaceChildren(); return; }
  who.replaceChildren(session.loggedIn ? h("span", {}, `${session.accessKey}${session.admin ? " (admin)" : " (read-only)"}`) : "",
    session.loggedIn ? h("button", { class: "secondary", onclick: async () => { await call("POST", "/api/logout"); session.loggedIn = false; showLogin(); } }, "Log out") : "");
}

function showLogin() {
  showWho();
  const ak = h("input", { name: "accessKey", autocomplete: "username", required: true });
  const sk = h("input", { name: "secretKey", type: "password", autocomplete: "current-password", required: true });
  main().replaceChildren(h("h2", {}, "Log in"), h("p", { class: "muted" }, "The brokers use ACL: log in with an account of plain_acl.yml."),
    h("form", { id: "login", onsubmit: async (e) => {
      e.preventDefault();
      try { session = await call("POST", "/api/login", { accessKey: ak.value, secretKey: sk.value }); status("", ""); render(); }
      catch (err) { status(err.message, "error"); }
    } }, field("Access key", ak), field("Secret key", sk), h("button", { type: "submit" }, "Log in")));
  ak.focus();
}

const PAGES = { cluster: pageCluster, topics: pageTopics, topic: pageTopic, groups: pageGroups, group: pageGroup,
  messages: pageMessages, producers: pageProducers, dlq: pageDlq, acl: pageAcl };

async function render() {
  timers.forEach(clearInterval); timers = [];
  if (session.loginRequired && !session.loggedIn) { showLogin(); return; }
  showWho();
  const { page, params } = route();
  const section = { topic: "topics", group: "groups" }[page] || page;
  for (const a of document.querySelectorAll("nav a")) {
    if (a.getAttribute("href") === `#/${section}`) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  const fn = PAGES[page];
  if (!fn) { main().replaceChildren(h("h2", {}, "Not found")); return; }
  try { await fn(params); } catch (e) { status(e.message, "error"); }
}

window.addEventListener("hashchange", () => { status("", ""); render().then(() => main().focus()); });
document.addEventListener("DOMContentLoaded", async () => {
  try { session = await call("GET", "/api/session"); } catch (e) { status(e.message, "error"); }
  render();
});
