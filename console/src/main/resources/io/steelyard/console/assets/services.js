// The services page: a short poll of the registry listing.
'use strict';

(() => {
  const { el, rate, millis, percent, showStatus, getJson, refreshEvents, labelCells } = steelyard;

  let shown = null;

  function render(data) {
    showStatus(data);
    // Redraw only what changed, so a row is not swapped under a pointer for nothing.
    const text = JSON.stringify(data);
    if (text === shown) return;
    shown = text;
    document.getElementById('prefix').textContent = data.prefix;
    const body = document.querySelector('#services tbody');
    body.replaceChildren(...data.services.map((s) => {
      const link = el('a', { href: '/services/' + encodeURIComponent(s.name) }, s.name);
      const row = el('tr', {},
        el('td', {}, link),
        el('td', { className: 'num' }, s.instances + (s.malformed ? ' (+' + s.malformed + ' unreadable)' : '')),
        el('td', { className: 'num' }, s.drained),
        el('td', { className: 'num' }, s.totalWeight),
        el('td', { className: 'num' }, rate(s.callsPerSecond)),
        el('td', { className: 'num' }, millis(s.p99Seconds)),
        el('td', { className: 'num' }, percent(s.errorRate)));
      row.dataset.service = s.name;
      return row;
    }));
    labelCells(document.getElementById('services'));
    document.getElementById('empty').hidden = data.services.length > 0 || data.listedAt == null;
  }

  async function poll() {
    try {
      render(await getJson('/api/services'));
    } catch (e) {
      showStatus({ stale: true, error: 'the console does not answer: ' + e.message });
    }
    refreshEvents(null);
  }

  poll();
  setInterval(poll, 1000);
})();
