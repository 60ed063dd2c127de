// spool serve's pages: live refresh over Server-Sent Events, the write
// forms, and reordering jobs by dragging. No library.
"use strict";

(function () {
  // The token lives in localStorage, which only this board's origin
  // (scheme, host and port) can read; cookies go to every port of the host.
  // The login page hands it over once.
  const tokenKey = "spool_token";
  const handed = document.querySelector('meta[name="spool-token"]');
  if (handed) {
    try { localStorage.setItem(tokenKey, handed.content); } catch (e) { /* private mode: writes will say so */ }
    location.replace("/tasks");
    return;
  }
  function token() {
    try { return localStorage.getItem(tokenKey) || ""; } catch (e) { return ""; }
  }

  let dragging = false, timer = null, version = 0;

  // refresh replaces <main> with the server's fresh rendering of this page.
  // Only the latest request's answer is used: answers can arrive out of order.
  let asked = 0;
  async function refresh() {
    if (dragging) { schedule(); return; }
    const n = ++asked;
    try {
      const res = await fetch(location.pathname + location.search, { headers: { "X-Spool-Partial": "1" }, credentials: "same-origin" });
      if (!res.ok || n !== asked) return;
      const html = await res.text();
      const main = document.getElementById("main");
      if (dragging || !main || n !== asked) return;
      const tmp = document.createElement("div");
      tmp.innerHTML = html;
      const access = tmp.querySelector("#access"), was = document.getElementById("access");
      if (access && was) was.replaceWith(access);
      const fresh = tmp.querySelector("#main");
      if (fresh) {
        const kept = keep(main);
        main.replaceWith(fresh);
        restore(fresh, kept);
        rearm(fresh);
        showOutput();
      }
      document.body.dataset.version = String(++version);
    } catch (e) {
      // the server is away for a moment: the next event or poll tries again
    } finally {
      if (n === asked) poll();
    }
  }

  // A field's key: its form (the write it makes, or where it goes) and name.
  function fieldKey(el) {
    const f = el.form || el.closest("form");
    const where = f ? (f.dataset.api || f.getAttribute("action") || "") : "";
    return where + "|" + (el.name || el.id || "");
  }
  const fields = "input, select, textarea";
  // keep reads what the user was doing on the page: the fields' values,
  // which field has focus (and its selection), the scroll positions, and
  // whether each output tail was followed (scrolled to its end).
  function keep(main) {
    const chosen = main.querySelector(".selected a[href]");
    const k = { values: new Map(), focus: null, sel: null, x: window.scrollX, y: window.scrollY, tails: [],
      selected: chosen && chosen.getAttribute("href") };
    main.querySelectorAll(fields).forEach((el) => {
      k.values.set(fieldKey(el), el.type === "checkbox" || el.type === "radio" ? el.checked : el.value);
    });
    const a = document.activeElement;
    if (a && main.contains(a) && a.matches(fields)) {
      k.focus = fieldKey(a);
      try { k.sel = [a.selectionStart, a.selectionEnd]; } catch (e) { /* no selection here */ }
    }
    main.querySelectorAll("pre.tail").forEach((el, i) => {
      k.tails[i] = el.scrollTop + el.clientHeight >= el.scrollHeight - 4 ? -1 : el.scrollTop;
    });
    return k;
  }
  function restore(main, k) {
    main.querySelectorAll(fields).forEach((el) => {
      const key = fieldKey(el);
      if (!k.values.has(key)) return;
      const v = k.values.get(key);
      if (el.type === "checkbox" || el.type === "radio") el.checked = v; else el.value = v;
      if (key === k.focus) {
        el.focus({ preventScroll: true });
        if (k.sel && k.sel[0] !== null) try { el.setSelectionRange(k.sel[0], k.sel[1]); } catch (e) { /* not text */ }
      }
    });
    main.querySelectorAll("pre.tail").forEach((el, i) => {
      const at = k.tails[i];
      el.scrollTop = at === undefined || at < 0 ? el.scrollHeight : at;
    });
    if (k.selected) {
      const a = [...main.querySelectorAll("a[href]")].find((a) => a.getAttribute("href") === k.selected);
      const item = a && a.closest("article.card, tr");
      if (item) item.classList.add("selected");
    }
    window.scrollTo(k.x, k.y);
  }

  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(refresh, 25); // coalesces a burst of events into one refetch
  }

  // A page with something that changes without events (a running agent's status)
  // asks to be polled through data-poll (milliseconds).
  let pollTimer = null;
  function poll() {
    clearTimeout(pollTimer);
    const main = document.getElementById("main");
    const ms = main && Number(main.dataset.poll);
    if (ms > 0) pollTimer = setTimeout(refresh, ms);
  }

  function live() {
    const dot = document.getElementById("live");
    // The Orchestrator view asks the same stream for the agent's output.
    const withOutput = !!document.querySelector('#main[data-page="orchestrator"]');
    const es = new EventSource("/api/events" + (withOutput ? "?output=1" : ""));
    if (withOutput) followOutput(es);
    es.onopen = () => { dot.classList.add("on"); dot.title = "live updates: on"; };
    es.onerror = () => { dot.classList.remove("on"); dot.title = "live updates: reconnecting"; };
    es.onmessage = (m) => {
      try { window.spoolLastEvent = JSON.parse(m.data); } catch (e) { /* keep going */ }
      schedule();
    };
  }

  function toast(text, ok) {
    const t = document.getElementById("toast");
    t.textContent = text;
    t.className = ok ? "ok" : "";
    t.hidden = false;
    clearTimeout(t.timer);
    t.timer = setTimeout(() => { t.hidden = true; }, ok ? 2000 : 8000);
  }

  async function post(url, params) {
    const headers = { "Content-Type": "application/x-www-form-urlencoded" };
    if (token()) headers.Authorization = "Bearer " + token();
    const res = await fetch(url, { method: "POST", credentials: "same-origin", body: params, headers });
    if (res.ok) { schedule(); return true; }
    let msg = res.status + " " + res.statusText;
    try { const j = await res.json(); if (j.error) msg = j.error.message + " (" + j.error.code + ")"; } catch (e) { /* not JSON */ }
    if (res.status === 401) msg = "This browser holds no valid token (spool serve restarted?): open the login URL it printed. " + msg;
    toast(msg, false);
    return false;
  }

  // A final action (cancel) asks first: its button turns into its
  // confirmation for 5 s. No dialog: nothing modal, no prompt a page could
  // imitate. armed maps a button's key to when it was armed, so a live
  // update that replaces the button keeps it armed.
  const armed = new Map();
  function armKey(b) {
    const f = b.closest("form");
    return (f ? f.dataset.api : "") + "|" + (b.dataset.bulk || "");
  }
  function armedNow(b) {
    const at = armed.get(armKey(b));
    return at !== undefined && Date.now() - at < 5000;
  }
  function arm(b, text, why, at) {
    armed.set(armKey(b), at);
    const label = b.textContent;
    b.textContent = text; b.title = why; b.classList.add("armed");
    setTimeout(() => {
      if (armed.get(armKey(b)) === at) armed.delete(armKey(b));
      if (b.isConnected) { b.textContent = label; b.classList.remove("armed"); }
    }, Math.max(0, 5000 - (Date.now() - at)));
  }
  function rearm(main) {
    main.querySelectorAll("form[data-confirm] button, .bulk button[data-confirm]").forEach((b) => {
      const at = armed.get(armKey(b));
      if (at !== undefined && Date.now() - at < 5000) arm(b, "Confirm " + b.textContent.toLowerCase(), (b.closest("form") || b).dataset.confirm, at);
    });
  }

  // Every write is a <form class="act" data-api="/api/...">.
  document.addEventListener("submit", (ev) => {
    const f = ev.target.closest("form.act");
    if (!f) return;
    ev.preventDefault();
    const b = f.querySelector("button");
    if (f.dataset.confirm && !armedNow(b)) {
      arm(b, "Confirm " + b.textContent.toLowerCase(), f.dataset.confirm, Date.now());
      return;
    }
    armed.delete(armKey(b));
    post(f.dataset.api, new URLSearchParams(new FormData(f)));
  });

  // Bulk: a .bulk bar's button applies its action to every ticked .pick of
  // its column or table, one write each; a final one asks first.
  document.addEventListener("click", async (ev) => {
    const b = ev.target.closest(".bulk button[data-bulk]");
    if (!b) return;
    const bar = b.closest(".bulk"), scope = bar.closest("section, main");
    const ids = [...scope.querySelectorAll("input.pick:checked")].map((el) => el.dataset.id);
    if (!ids.length) { toast("select some first", false); return; }
    if (b.dataset.confirm && !armedNow(b)) {
      arm(b, "Confirm " + b.textContent.toLowerCase() + " of " + ids.length, b.dataset.confirm, Date.now());
      return;
    }
    armed.delete(armKey(b));
    let done = 0;
    for (const id of ids) {
      if (await post(bar.dataset.api + encodeURIComponent(id) + "/" + b.dataset.bulk, new URLSearchParams())) done++;
    }
    if (done === ids.length) toast(b.dataset.bulk + ": " + done + " done", true);
  });

  // Jobs: press on a row's grip, move, release over another queued row.
  // Pointer events rather than HTML drag and drop: they work with a mouse,
  // a pen or a finger alike.
  let src = null, target = null, after = false, edgeTimer = null, lastY = 0;
  function clearMarks() {
    document.querySelectorAll(".drop-before, .drop-after, .dragging").forEach((el) => el.classList.remove("drop-before", "drop-after", "dragging"));
  }
  document.addEventListener("pointerdown", (ev) => {
    const grip = ev.target.closest("td.grip");
    const row = grip && grip.closest("tr[data-movable]");
    if (!row) return;
    ev.preventDefault();
    src = row; dragging = true; target = null;
    row.classList.add("dragging");
    // Near the window's top or bottom edge the page scrolls, so a row can
    // be dragged to one off screen.
    clearInterval(edgeTimer);
    edgeTimer = setInterval(() => {
      if (!src) { clearInterval(edgeTimer); return; }
      if (lastY < 48) window.scrollBy(0, -24);
      else if (lastY > window.innerHeight - 48) window.scrollBy(0, 24);
    }, 50);
  });
  document.addEventListener("pointermove", (ev) => {
    if (!src) return;
    lastY = ev.clientY;
    const el = document.elementFromPoint(ev.clientX, ev.clientY);
    const row = el && el.closest("tr[data-movable]");
    clearMarks();
    src.classList.add("dragging");
    target = row && row !== src ? row : null;
    if (!target) return;
    const r = target.getBoundingClientRect();
    after = ev.clientY > r.top + r.height / 2;
    target.classList.add(after ? "drop-after" : "drop-before");
  });
  // A drag the browser takes over (a scroll, a touch cancelled) ends here.
  document.addEventListener("pointercancel", () => {
    if (!src) return;
    src = null; target = null; dragging = false;
    clearMarks();
  });
  document.addEventListener("pointerup", async () => {
    if (!src) return;
    const from = src, to = target, where = after ? "after" : "before";
    src = null; target = null;
    clearMarks();
    dragging = false;
    if (!to) return;
    move(from, to, where);
  });

  // move places a job before or after another, which gives it that job's
  // tier: a move that changes the tier asks first, and happens when the
  // same move is made again within 10 s.
  let askedMove = null;
  async function move(from, to, where) {
    const tier = (el) => (el.className.match(/tier-row-(\w+)/) || [])[1];
    const key = from.dataset.job + " " + where + " " + to.dataset.job;
    if (tier(from) !== tier(to) && !(askedMove && askedMove.key === key && Date.now() - askedMove.at < 10000)) {
      askedMove = { key, at: Date.now() };
      toast(from.dataset.job + " would become " + tier(to) + " (the tier of " + to.dataset.job + "): do the same move again to confirm", false);
      return;
    }
    askedMove = null;
    const p = new URLSearchParams();
    p.set(where, to.dataset.job);
    if (await post("/api/jobs/" + encodeURIComponent(from.dataset.job) + "/move", p)) toast("moved " + from.dataset.job, true);
  }

  // Keys: / searches (or filters), j and k move through the cards or rows,
  // Enter opens the one selected. Not while typing in a field.
  function items() {
    return [...document.querySelectorAll("#main article.card, #main table.rows tbody tr")].filter((el) => el.querySelector("a[href]"));
  }
  function select(i) {
    const all = items();
    if (!all.length) return;
    const at = Math.max(0, Math.min(all.length - 1, i));
    all.forEach((el) => el.classList.remove("selected"));
    all[at].classList.add("selected");
    all[at].scrollIntoView({ block: "nearest" });
  }
  document.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || ev.target.matches("input, select, textarea")) return;
    if (ev.key === "/") {
      const f = document.querySelector('#main input[type="search"], #main .filters input');
      if (f) { ev.preventDefault(); f.focus(); f.select(); }
    } else if ((ev.key === "J" || ev.key === "K") && document.querySelector("#main tr.selected[data-movable]")) {
      // An admin moves the selected job past its neighbour: J down, K up.
      const row = document.querySelector("#main tr.selected[data-movable]");
      const next = ev.key === "J" ? row.nextElementSibling : row.previousElementSibling;
      if (!next || !next.dataset.job) return;
      move(row, next, ev.key === "J" ? "after" : "before");
    } else if (ev.key === "j" || ev.key === "k") {
      const cur = document.querySelector("#main .selected");
      const at = cur ? items().indexOf(cur) : -1;
      select(at < 0 ? 0 : at + (ev.key === "j" ? 1 : -1));
    } else if (ev.key === "Enter") {
      const cur = document.querySelector("#main .selected a[href]");
      if (cur) { ev.preventDefault(); location.href = cur.href; }
    }
  });

  // The Orchestrator view follows the agent's output as it is written
  // (/api/events?output=1): the stream's text replaces the rendered
  // tail, also after a live update, and stays at its end unless the user
  // scrolled up. At most the last 256 KiB are kept.
  let output = null;
  function showOutput() {
    const pre = document.querySelector("#main pre.tail");
    if (!pre || output === null) return;
    const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    pre.textContent = output;
    if (atEnd) pre.scrollTop = pre.scrollHeight;
  }
  function followOutput(es) {
    es.addEventListener("reset", (m) => { output = JSON.parse(m.data); showOutput(); });
    es.addEventListener("append", (m) => {
      output = (output || "") + JSON.parse(m.data);
      if (output.length > 256 << 10) output = output.slice(-(256 << 10));
      showOutput();
    });
  }

  // An output tail starts at its end, the latest lines.
  document.querySelectorAll("pre.tail").forEach((el) => { el.scrollTop = el.scrollHeight; });
  live();
  poll();
})();
