// hookbox admin UI: local times, the live tail, the keyboard, replays and
// Copy as curl. Served from the handler (script-src 'self'); no library.
// Everything a stored event holds is put in the page as text, never as HTML.
"use strict";
(function () {
  document.documentElement.classList.add("js");
  const $ = (sel, root) => (root || document).querySelector(sel);
  const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));

  // Times: the browser's zone shown, UTC on hover.
  function localTime(el) {
    const iso = el.getAttribute("datetime");
    const d = new Date(iso);
    if (isNaN(d)) return;
    el.textContent = d.toLocaleString(undefined, { year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit" });
    el.title = iso.replace("T", " ").replace("Z", " UTC");
  }
  $$("time[datetime]").forEach(localTime);

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    for (const k of kids) e.append(k);
    return e;
  }

  // One row of the event list, as the server's "row" template makes it.
  function eventRow(ev) {
    const tr = el("tr", { "data-id": String(ev.id) });
    tr.append(el("td", { class: "pick-col" }, el("input", { type: "checkbox", class: "pick needs-js", value: String(ev.id), "aria-label": "select event " + ev.id })));
    tr.append(el("td", {}, el("a", { class: "open", href: "/events/" + encodeURIComponent(ev.id) }, String(ev.id))));
    const t = el("time", { datetime: ev.received_at }, ev.received_at);
    localTime(t);
    tr.append(el("td", {}, t));
    tr.append(el("td", {}, ev.source));
    tr.append(el("td", { class: "mono wrap" }, ev.event_id));
    tr.append(el("td", { class: "wrap" }, ev.type ? ev.type : el("span", { class: "muted" }, "–")));
    const td = el("td", {});
    if (!ev.deliveries || ev.deliveries.length === 0) td.append(el("span", { class: "muted" }, "no target"));
    for (const d of ev.deliveries || []) {
      td.append(el("span", { class: "badge st-" + d.status, title: d.last_error || "" }, d.target + ": " + d.status + (d.attempts > 1 ? " ×" + d.attempts : "")), " ");
    }
    if (ev.redeliveries) td.append(el("span", { class: "badge redelivered", title: "redelivered " + ev.redeliveries + " times" }, "↻ " + ev.redeliveries));
    tr.append(td);
    return tr;
  }

  // The live tail: new events on top; the page keeps a window of rows.
  // Messages are applied together, ten times a second at most, so a
  // burst costs one layout, not one per event.
  const live = $("#live");
  const tbody = $("#events tbody");
  if (live && live.dataset.tail && tbody && window.EventSource) {
    const windowRows = parseInt(document.body.dataset.window, 10) || 500;
    const byId = new Map();
    for (const tr of tbody.rows) byId.set(tr.dataset.id, tr);
    let pending = [];
    let timer = 0;
    const flush = () => {
      timer = 0;
      const batch = pending;
      pending = [];
      const fresh = new Map();
      for (const ev of batch) {
        const id = String(ev.id);
        const had = byId.get(id);
        if (had) {
          // Its deliveries moved on: the row is redrawn where it is.
          const row = eventRow(ev);
          const pick = $("input.pick", had);
          $("input.pick", row).checked = pick && pick.checked;
          if (had.classList.contains("sel")) row.classList.add("sel");
          had.replaceWith(row);
          byId.set(id, row);
        } else {
          fresh.set(id, ev); // the latest message of an event wins
        }
      }
      // Oldest first in the stream: newest first on the page, and no
      // more than the window of them.
      const add = Array.from(fresh.values()).sort((a, b) => b.id - a.id).slice(0, windowRows);
      if (add.length > 0) {
        const frag = document.createDocumentFragment();
        for (const ev of add) {
          const row = eventRow(ev);
          if (add.length < 20) row.classList.add("fresh");
          byId.set(String(ev.id), row);
          frag.append(row);
        }
        tbody.prepend(frag);
        const empty = $("#empty");
        if (empty) empty.remove();
      }
      while (tbody.rows.length > windowRows) {
        const last = tbody.rows[tbody.rows.length - 1];
        if (last.classList.contains("sel")) break;
        byId.delete(last.dataset.id);
        last.remove();
      }
    };
    const es = new EventSource(live.dataset.tail);
    es.onopen = () => { live.classList.add("on"); live.textContent = "live"; };
    es.onerror = () => { live.classList.remove("on"); live.textContent = "reconnecting…"; };
    es.addEventListener("event", (m) => {
      pending.push(JSON.parse(m.data));
      if (!timer) timer = setTimeout(flush, 100);
    });
  }

  // Replays: each asks first, then says what it did.
  const dlg = $("#confirm");
  function confirmFirst(text, ok) {
    return new Promise((resolve) => {
      if (!dlg || !dlg.showModal) { resolve(window.confirm(text)); return; }
      $("#confirm-text").textContent = text;
      $("#confirm-ok").textContent = ok || "Replay";
      dlg.returnValue = "";
      dlg.addEventListener("close", () => resolve(dlg.returnValue === "ok"), { once: true });
      dlg.showModal();
      $("#confirm-ok").focus();
    });
  }
  const result = $("#result");
  let resultTimer;
  function say(lines, bad) {
    result.textContent = lines.join("\n");
    result.classList.toggle("bad", !!bad);
    result.hidden = false;
    clearTimeout(resultTimer);
    resultTimer = setTimeout(() => { result.hidden = true; }, 15000);
  }
  async function replay(req) {
    const r = await fetch("/api/replay", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(req), credentials: "same-origin" });
    const body = await r.json().catch(() => ({ error: "HTTP " + r.status }));
    if (!r.ok) throw new Error(body.error || "HTTP " + r.status);
    return body;
  }
  async function replayAll(reqs, what) {
    if (!(await confirmFirst(what + "?"))) return;
    const lines = [];
    let bad = false;
    let queued = 0;
    for (const req of reqs) {
      try {
        const res = await replay(req);
        queued += res.queued;
        const label = req.event ? "event " + req.event + (req.target ? " → " + req.target : "") + ": " : "";
        for (const m of res.messages) lines.push(label + m);
      } catch (e) {
        bad = true;
        lines.push((req.event ? "event " + req.event + ": " : "") + e.message);
      }
    }
    if (reqs.length > 1) lines.unshift(queued + " deliveries queued again in all");
    say(lines, bad);
  }
  $$("button.replay").forEach((b) => b.addEventListener("click", () => {
    const req = {};
    if (b.dataset.event) req.event = parseInt(b.dataset.event, 10);
    if (b.dataset.dead) req.dead = true;
    const what = req.event ? (req.dead ? "Replay the dead deliveries of event " + req.event : "Replay every delivery of event " + req.event)
      : "Replay every dead delivery";
    replayAll([req], what);
  }));

  // Pause and resume a target (the health page), as hookbox pause and
  // resume do; the page shows the new state once it is done.
  $$("button.target-action").forEach((b) => b.addEventListener("click", async () => {
    const name = b.dataset.target, verb = b.dataset.verb;
    const text = verb === "pause"
      ? "Pause " + name + "? Its deliveries wait, spending no attempts, until it is resumed."
      : "Resume " + name + "? Its held deliveries are due at once.";
    if (!(await confirmFirst(text, verb === "pause" ? "Pause" : "Resume"))) return;
    try {
      const r = await fetch("/api/targets/" + encodeURIComponent(name) + "/" + verb, { method: "POST", credentials: "same-origin" });
      const body = await r.json().catch(() => ({ error: "HTTP " + r.status }));
      if (!r.ok) throw new Error(body.error || "HTTP " + r.status);
      say([(verb === "pause" ? "paused " : "resumed ") + name + ": " + body.deliveries + (verb === "pause" ? " deliveries held" : " deliveries released") +
        (body.already ? " (it was " + (verb === "pause" ? "paused" : "not paused") + " already)" : "")]);
      setTimeout(() => window.location.reload(), 1200);
    } catch (e) {
      say([name + ": " + e.message], true);
    }
  }));

  // Selections: the event list replays whole events, the dead-letter
  // page each picked dead delivery.
  function picks() { return $$("input.pick:checked"); }
  const selBtn = $("#replay-selected") || $("#replay-selected-dead");
  function syncSel() { if (selBtn) selBtn.disabled = picks().length === 0; }
  document.addEventListener("change", (e) => { if (e.target.classList && e.target.classList.contains("pick")) syncSel(); });
  const all = $("#select-all");
  if (all) all.addEventListener("change", () => { $$("input.pick").forEach((c) => { c.checked = all.checked; }); syncSel(); });
  if (selBtn) selBtn.addEventListener("click", () => {
    const dead = selBtn.id === "replay-selected-dead";
    const reqs = picks().map((c) => dead ? { event: parseInt(c.value, 10), dead: true, target: c.dataset.target } : { event: parseInt(c.value, 10) });
    const ids = reqs.map((r) => r.event).join(", ");
    replayAll(reqs, dead ? "Replay " + reqs.length + " dead deliveries (events " + ids + ")" : "Replay every delivery of " + reqs.length + " events (" + ids + ")");
  });

  // Copy as curl.
  const curlForm = $("#curl-form");
  if (curlForm) curlForm.addEventListener("submit", async (e) => {
    e.preventDefault();
    const url = $("#curl-url").value;
    const r = await fetch("/api/events/" + encodeURIComponent(curlForm.dataset.event) + "/curl?url=" + encodeURIComponent(url));
    const body = await r.json().catch(() => ({ error: "HTTP " + r.status }));
    if (!r.ok) { say([body.error], true); return; }
    const ws = $("#curl-warnings");
    ws.replaceChildren(...(body.warnings || []).map((w) => el("li", {}, w)));
    $("#curl-command").textContent = body.command;
    $("#curl-out").hidden = false;
    try {
      await navigator.clipboard.writeText(body.command);
      say([body.signed ? "Copied, signed afresh." : "Copied."]);
    } catch (_) {
      say(["The command is below; select it to copy."]);
    }
  });

  // The keyboard: j/k move, Enter opens, r replays, / searches.
  function rows() { return $$("table.list tbody tr"); }
  function current() { return $("table.list tbody tr.sel"); }
  function move(step) {
    const rs = rows();
    if (rs.length === 0) return;
    const cur = current();
    let i = cur ? rs.indexOf(cur) + step : (step > 0 ? 0 : rs.length - 1);
    i = Math.max(0, Math.min(rs.length - 1, i));
    if (cur) cur.classList.remove("sel");
    rs[i].classList.add("sel");
    rs[i].scrollIntoView({ block: "nearest" });
  }
  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const t = e.target;
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) {
      if (e.key === "Escape") t.blur();
      return;
    }
    if (dlg && dlg.open) return;
    switch (e.key) {
      case "j": move(1); break;
      case "k": move(-1); break;
      case "Enter": {
        const cur = current();
        if (!cur) return;
        const a = $("a.open", cur);
        if (a) window.location.href = a.href;
        break;
      }
      case "r": {
        const cur = current();
        if (cur && $("#dead")) {
          const c = $("input.pick", cur);
          replayAll([{ event: parseInt(cur.dataset.id, 10), dead: true, target: c.dataset.target }], "Replay the dead delivery of event " + cur.dataset.id + " to " + c.dataset.target);
        } else if (cur) {
          replayAll([{ event: parseInt(cur.dataset.id, 10) }], "Replay every delivery of event " + cur.dataset.id);
        } else {
          const b = $("#replay-event");
          if (b) b.click();
        }
        break;
      }
      case "/": {
        const s = $("#search");
        if (s) s.focus(); else window.location.href = "/#search";
        break;
      }
      default: return;
    }
    e.preventDefault();
  });
  if (location.hash === "#search" && $("#search")) $("#search").focus();
})();
