// One service's page: live rows and chart from the server's event stream, and the actions.
'use strict';

(() => {
  const { el, rate, millis, percent, showStatus, refreshEvents, act, labelCells } = steelyard;
  const service = decodeURIComponent(location.pathname.split('/')[2] || '');
  let readOnly = true;

  document.title = service + ' · steelyard console';
  document.getElementById('title').textContent = service;
  document.getElementById('crumb-service').textContent = service;

  function shareBar(kind, share) {
    const bar = el('div', { className: 'bar ' + kind });
    bar.dataset.share = share == null ? '' : share.toFixed(4);
    bar.style.width = ((share || 0) * 100).toFixed(2) + '%';
    const label = el('span', { className: 'bar-label' },
      share == null ? 'no metrics' : (share * 100).toFixed(1) + '%');
    return el('div', { className: 'bar-track' }, bar, label);
  }

  function renderChart(data) {
    const chart = document.getElementById('chart');
    chart.replaceChildren(...data.instances.map((i) => {
      const group = el('div', { className: 'chart-row' + (i.state === 'drained' ? ' drained' : '') },
        el('div', { className: 'chart-label' }, i.address),
        el('div', { className: 'chart-bars' },
          shareBar('expected', i.expectedShare),
          shareBar('observed', i.observedShare)));
      group.dataset.address = i.address;
      return group;
    }));
  }

  function ttl(i) {
    return i.ttlSeconds == null ? (i.lease ? '…' : 'no lease') : i.ttlSeconds + ' s';
  }

  function actionButtons(i) {
    const cell = el('td', { className: 'actions-col' });
    if (readOnly) return cell;
    const button = (name, label) => {
      const b = el('button', { type: 'button', className: 'action ' + name }, label);
      b.dataset.action = name;
      b.addEventListener('click', () => confirmAction(name, i));
      return b;
    };
    cell.append(button('weight', 'Weight…'));
    cell.append(i.state === 'drained' ? button('undrain', 'Undrain') : button('drain', 'Drain'));
    cell.append(button('deregister', 'Deregister'));
    return cell;
  }

  function renderRows(data) {
    const body = document.querySelector('#instances tbody');
    body.replaceChildren(...data.instances.map((i) => {
      const meta = i.metadata || {};
      const zone = meta.zone || meta.region;
      const row = el('tr', { className: i.state },
        el('td', { className: 'address' }, i.address),
        el('td', { className: 'num weight' }, i.weight),
        el('td', { className: 'state' }, i.state
          + (i.state === 'drained' && i.drainedFrom != null ? ' (was ' + i.drainedFrom + ')' : '')),
        el('td', { title: meta.region ? 'region ' + meta.region : '' }, zone || '–'),
        el('td', {}, meta.version || '–'),
        el('td', { className: 'num' }, ttl(i)),
        el('td', { className: 'num', title: i.metricsNote || '' }, rate(i.callsPerSecond)),
        el('td', { className: 'num' }, millis(i.p99Seconds)),
        el('td', { className: 'num' }, percent(i.errorRate)),
        actionButtons(i));
      row.dataset.address = i.address;
      row.dataset.weight = i.weight;
      return row;
    }));
    labelCells(document.getElementById('instances'));
    document.getElementById('empty').hidden = data.instances.length > 0 || !data.listed;
    document.querySelector('.actions-col').hidden = readOnly;
    const malformed = document.getElementById('malformed');
    malformed.hidden = data.malformed.length === 0;
    malformed.replaceChildren(...data.malformed.map((m) => el('div', {},
      'unreadable value at ', el('code', {}, m.key), ': ', m.reason)));
  }

  function render(data) {
    readOnly = data.readOnly;
    showStatus(data);
    const drained = data.instances.filter((i) => i.state === 'drained').length;
    document.getElementById('summary').textContent = data.listed
      ? data.instances.length + ' instances, ' + drained + ' drained, total weight '
        + data.totalWeight + (data.revision ? ' · etcd revision ' + data.revision : '')
      : 'reading etcd…';
    // A dialog open on a row keeps its row: only the cells change under it.
    renderChart(data);
    renderRows(data);
    document.body.dataset.revision = data.revision || '';
  }

  const texts = {
    weight: (i) => ['Set the weight of ' + i.address,
      'Its share of new calls follows at once. Current weight: ' + i.weight + '.'],
    drain: (i) => ['Drain ' + i.address + '?',
      'Its weight goes to 0: it stays registered but gets no new calls. Undrain restores '
        + i.weight + '.'],
    undrain: (i) => ['Undrain ' + i.address + '?',
      'It gets back weight ' + (i.drainedFrom != null ? i.drainedFrom : 1) + '.'],
    deregister: (i) => ['Deregister ' + i.address + '?',
      'Its key (and drain note) is deleted; an agent holding it stays deregistered until restarted.'],
  };

  const dialog = document.getElementById('confirm-dialog');
  let pending = null;

  function confirmAction(name, instance) {
    pending = { action: name, service, address: instance.address };
    const [title, text] = texts[name](instance);
    document.getElementById('confirm-title').textContent = title;
    document.getElementById('confirm-text').textContent = text;
    const weight = document.getElementById('weight-input');
    document.getElementById('weight-label').hidden = name !== 'weight';
    weight.value = name === 'weight' ? String(instance.weight) : '';
    const error = document.getElementById('confirm-error');
    error.hidden = true;
    error.textContent = '';
    dialog.dataset.action = name;
    dialog.showModal();
    if (name === 'weight') weight.select();
  }

  document.getElementById('confirm-cancel').addEventListener('click', () => {
    pending = null;
    dialog.close();
  });

  document.getElementById('confirm-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    if (!pending) return;
    const body = Object.assign({}, pending);
    if (body.action === 'weight') body.weight = document.getElementById('weight-input').value;
    const ok = document.getElementById('confirm-ok');
    ok.disabled = true;
    try {
      const result = await act(body);
      if (result.ok) {
        pending = null;
        dialog.close();
        flash(result.message, false);
      } else {
        const error = document.getElementById('confirm-error');
        error.textContent = result.message;
        error.hidden = false;
      }
    } finally {
      ok.disabled = false;
      refreshEvents(service);
    }
  });

  function flash(message, failed) {
    const f = document.getElementById('flash');
    f.textContent = message;
    f.className = 'flash' + (failed ? ' failed' : '');
    f.hidden = false;
  }

  function connect() {
    const source = new EventSource('/api/services/' + encodeURIComponent(service) + '/stream');
    source.onmessage = (e) => render(JSON.parse(e.data));
    source.onerror = () => {
      showStatus({ stale: true, error: 'lost the connection to the console; reconnecting' });
    };
  }

  connect();
  refreshEvents(service);
  setInterval(() => refreshEvents(service), 2000);
})();
