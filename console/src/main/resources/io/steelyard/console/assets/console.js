// Shared by the console's pages: formatting, the status banner, the event list, writes.
'use strict';

const steelyard = (() => {
  function el(tag, props, ...children) {
    const e = document.createElement(tag);
    Object.assign(e, props || {});
    for (const c of children) {
      e.append(c instanceof Node ? c : document.createTextNode(c == null ? '' : String(c)));
    }
    return e;
  }

  function rate(v) {
    return v == null ? '–' : v >= 100 ? v.toFixed(0) : v.toFixed(1);
  }

  function millis(seconds) {
    if (seconds == null) return '–';
    const ms = seconds * 1000;
    return (ms >= 100 ? ms.toFixed(0) : ms.toFixed(1)) + ' ms';
  }

  function percent(v) {
    return v == null ? '–' : (v * 100).toFixed(1) + '%';
  }

  function ago(iso) {
    const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
    return s < 90 ? s + ' s' : Math.round(s / 60) + ' min';
  }

  /** Shows etcd's state: stale since when, and the failure as the CLI names it. */
  function showStatus(data) {
    const status = document.getElementById('status');
    if (data.stale || data.error) {
      status.hidden = false;
      status.className = 'status stale';
      status.replaceChildren(
        el('strong', {}, data.stale
          ? (data.staleSince ? 'Stale for ' + ago(data.staleSince) + ': ' : 'Stale: ')
            + 'etcd cannot be read, this is the last view it gave.'
          : 'etcd refused a read.'),
        el('br'),
        el('span', { className: 'error-text' }, data.error || ''));
    } else {
      status.hidden = true;
      status.replaceChildren();
    }
    const mode = document.getElementById('mode');
    mode.textContent = data.readOnly ? 'read-only' : '';
  }

  async function getJson(url) {
    const r = await fetch(url, { cache: 'no-store', credentials: 'same-origin' });
    if (!r.ok) throw new Error(await r.text());
    return r.json();
  }

  /** The actions taken through this console, optionally of one service only. */
  async function refreshEvents(service) {
    let data;
    try {
      data = await getJson('/api/events');
    } catch (e) {
      return;
    }
    const events = data.events.filter((e) => !service || e.service === service);
    const list = document.getElementById('events');
    list.replaceChildren(...events.slice(0, 20).map((e) => el('li',
      { className: e.ok ? 'ok' : 'failed' },
      el('time', { dateTime: e.at }, new Date(e.at).toLocaleTimeString()), ' ',
      el('span', { className: 'who' }, e.who), ' ',
      el('strong', {}, e.action), ' ', e.service, ' ', e.address, ': ',
      el('span', { className: 'message' }, e.message))));
    document.getElementById('no-events').hidden = events.length > 0;
  }

  /** One write; resolves to {ok, message} (the CLI's words either way). */
  async function act(body) {
    const r = await fetch('/api/actions', {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json', 'X-Steelyard-Console': '1' },
      body: JSON.stringify(body),
    });
    const type = r.headers.get('Content-Type') || '';
    if (type.startsWith('application/json')) return r.json();
    return { ok: false, message: (await r.text()).trim() };
  }

  /** Names each cell after its column, so narrow screens can show rows as labelled cards. */
  function labelCells(table) {
    const labels = [...table.querySelectorAll('thead th')].map((th) => th.textContent);
    for (const row of table.querySelectorAll('tbody tr')) {
      [...row.children].forEach((td, i) => { td.dataset.label = labels[i] || ''; });
    }
  }

  return { el, rate, millis, percent, ago, showStatus, getJson, refreshEvents, act, labelCells };
})();
