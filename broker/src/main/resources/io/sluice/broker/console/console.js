// The Sluice web console: plain JavaScript over the admin API (/api/...), no build step, no library.
// Everything it shows comes from the API under the credentials given in its login form, so the API's
// authentication and per-queue permissions apply unchanged: listings hold only the queues the user
// may see, a refused purge or delete shows the API's sentence. Text from the broker is only ever set
// with textContent, never parsed as HTML.
'use strict';

const POLL_MS = 2000;
const HISTORY_POINTS = 150; // 5 minutes of polls, per queue, for the charts
const AUTH_KEY = 'sluice.console.authorization';

const state = {
  authorization: sessionStorage.getItem(AUTH_KEY),
  user: sessionStorage.getItem(AUTH_KEY + '.user'),
  timer: null,
  generation: 0,   // bumped on every navigation, so that a late poll of the previous page is dropped
  view: null,      // {update(data)} of the page shown
  history: new Map(), // queue name -> [{t, backlog, published, acked}]
};

// ---- the API -----------------------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function api(method, path) {
  const headers = { 'X-Sluice-Console': '1', 'Accept': 'application/json' };
  if (state.authorization) {
    headers['Authorization'] = state.authorization;
  }
  let response;
  try {
    // credentials 'omit': only the Authorization header above authenticates, never one the browser kept.
    response = await fetch(path, { method, headers, credentials: 'omit', cache: 'no-store' });
  } catch (e) {
    throw new ApiError(0, 'unreachable', 'the broker does not answer at ' + location.host + ' (' + e.message + ')');
  }
  let body = null;
  try {
    body = await response.json();
  } catch (e) {
    body = null;
  }
  if (!response.ok) {
    const message = body && body.message ? body.message : 'HTTP ' + response.status + ' from ' + method + ' ' + path;
    throw new ApiError(response.status, body && body.error ? body.error : 'http_' + response.status, message);
  }
  return body;
}

function queuePath(name) {
  return '/api/queues/' + encodeURIComponent(name);
}

// ---- small DOM helpers -------------------------------------------------------------------------

function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes || {})) {
    if (value === undefined || value === null || value === false) {
      continue;
    }
    if (key === 'class') {
      node.className = value;
    } else if (key.startsWith('on')) {
      node.addEventListener(key.substring(2), value);
    } else if (key === 'dataset') {
      Object.assign(node.dataset, value);
    } else {
      node.setAttribute(key, value === true ? '' : value);
    }
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) {
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
  }
  return node;
}

const SVG = 'http://www.w3.org/2000/svg';

function svg(tag, attributes, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attributes || {})) {
    node.setAttribute(key, value);
  }
  for (const child of children) {
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function notice(text, isError) {
  const box = document.getElementById('notice');
  box.textContent = text || '';
  box.className = isError ? 'error' : '';
  box.hidden = !text;
}

// ---- formatting --------------------------------------------------------------------------------

function count(n) {
  return typeof n === 'number' ? n.toLocaleString('en-US') : '–';
}

function mebibytes(bytes) {
  return typeof bytes === 'number' ? (bytes / (1024 * 1024)).toFixed(1) : '–';
}

/** Bytes in the largest binary unit that leaves a number of at least 1. */
function bytes(n) {
  if (typeof n !== 'number') {
    return '–';
  }
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return (unit === 0 ? String(value) : value.toFixed(1)) + ' ' + units[unit];
}

function rate(perSecond) {
  if (typeof perSecond !== 'number') {
    return '–';
  }
  return perSecond >= 100 ? Math.round(perSecond).toLocaleString('en-US') : perSecond.toFixed(1);
}

/** A queue's rate; '–' until the broker has sampled it twice (intervalMs 0). */
function rateOf(queue, key) {
  return queue.rates && queue.rates.intervalMs > 0 ? rate(queue.rates[key]) : '–';
}

function age(seconds) {
  if (seconds === null || seconds === undefined) {
    return 'unknown';
  }
  if (seconds <= 0) {
    return '–';
  }
  if (seconds < 60) {
    return seconds.toFixed(seconds < 10 ? 1 : 0) + ' s';
  }
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) {
    return minutes + ' min ' + Math.floor(seconds % 60) + ' s';
  }
  const hours = Math.floor(minutes / 60);
  return hours < 48 ? hours + ' h ' + (minutes % 60) + ' min' : Math.floor(hours / 24) + ' d ' + (hours % 24) + ' h';
}

/** The flow state as a badge (FREE, SLOWED, BLOCKED) followed by its reason when it is not free. */
function flow(queue) {
  const stateName = (queue.flowState || 'free').toLowerCase();
  return [
    el('span', { class: 'badge badge-' + stateName }, stateName.toUpperCase()),
    stateName !== 'free' && queue.flowReason ? el('span', { class: 'flow-reason' }, queue.flowReason) : null,
  ];
}

function table(columns, rows, empty, rowAttributes) {
  const head = el('tr', {}, columns.map(c => el('th', { class: c.number ? 'number' : null }, c.title)));
  const body = rows.length === 0
    ? [el('tr', {}, el('td', { class: 'empty', colspan: String(columns.length) }, empty))]
    : rows.map(row => el('tr', rowAttributes ? rowAttributes(row) : {},
      columns.map(c => el('td', { class: [c.key, c.number ? 'number' : null].filter(Boolean).join(' ') }, c.show(row)))));
  return el('table', {}, el('thead', {}, head), el('tbody', {}, body));
}

// ---- history for the charts --------------------------------------------------------------------

function remember(queue) {
  let points = state.history.get(queue.name);
  if (!points) {
    points = [];
    state.history.set(queue.name, points);
  }
  const rates = queue.rates || {};
  points.push({
    t: Date.now(),
    backlog: queue.backlogMessages,
    published: rates.publishedPerSecond || 0,
    acked: rates.ackedPerSecond || 0,
  });
  if (points.length > HISTORY_POINTS) {
    points.splice(0, points.length - HISTORY_POINTS);
  }
}

/** A line chart of the series named in {@code keys} over the remembered points, as SVG. */
function chart(points, keys, unit) {
  const width = 520;
  const height = 200;
  const left = 56;
  const right = 10;
  const top = 10;
  const bottom = 24;
  const plotWidth = width - left - right;
  const plotHeight = height - top - bottom;
  const max = Math.max(1, ...points.flatMap(p => keys.map(k => p[k])));
  const spanMs = POLL_MS * (HISTORY_POINTS - 1);
  const now = points.length ? points[points.length - 1].t : Date.now();
  const x = t => left + plotWidth * (1 - Math.min(1, (now - t) / spanMs));
  const y = v => top + plotHeight * (1 - v / max);
  const chartNode = svg('svg', { class: 'chart', viewBox: '0 0 ' + width + ' ' + height, role: 'img' },
    svg('line', { class: 'axis', x1: left, y1: top + plotHeight, x2: width - right, y2: top + plotHeight }),
    svg('line', { class: 'axis', x1: left, y1: top, x2: left, y2: top + plotHeight }),
    svg('line', { class: 'axis', x1: left, y1: top, x2: width - right, y2: top }),
    svg('text', { x: left - 6, y: top + 4, 'text-anchor': 'end' },
      max >= 100 || Number.isInteger(max) ? Math.round(max).toLocaleString('en-US') : max.toFixed(1)),
    svg('text', { x: left - 6, y: top + plotHeight + 4, 'text-anchor': 'end' }, '0'),
    svg('text', { x: left, y: height - 6 }, '−' + Math.round(spanMs / 60000) + ' min'),
    svg('text', { x: width - right, y: height - 6, 'text-anchor': 'end' }, 'now'),
    svg('text', { x: left + 4, y: top + 14 }, unit));
  for (const key of keys) {
    if (points.length > 0) {
      const coordinates = points.map(p => x(p.t).toFixed(1) + ',' + y(p[key]).toFixed(1)).join(' ');
      chartNode.append(svg('polyline', { class: 'series-' + key, points: coordinates }));
    }
  }
  return chartNode;
}

// ---- the pages ---------------------------------------------------------------------------------

const QUEUE_COLUMNS = [
  { title: 'Queue', key: 'name', show: q => el('a', { href: '#/queue/' + encodeURIComponent(q.name) }, q.name) },
  { title: 'Backlog', key: 'backlog', number: true, show: q => count(q.backlogMessages) },
  { title: 'Backlog MiB', key: 'backlog-mib', number: true, show: q => mebibytes(q.backlogBytes) },
  { title: 'Ready', key: 'ready', number: true, show: q => count(q.readyMessages) },
  { title: 'Unacked', key: 'unacked', number: true, show: q => count(q.unackedMessages) },
  { title: 'Published/s', key: 'published-rate', number: true, show: q => rateOf(q, 'publishedPerSecond') },
  { title: 'Acked/s', key: 'acked-rate', number: true, show: q => rateOf(q, 'ackedPerSecond') },
  { title: 'Oldest message', key: 'oldest', number: true, show: q => age(q.oldestUnackedAgeSeconds) },
  { title: 'Flow', key: 'flow flow-cell', show: flow },
  { title: 'Consumers', key: 'consumers', number: true, show: q => count(q.consumers) },
  { title: 'Producers', key: 'producers', number: true, show: q => count(q.producers) },
];

const CONSUMER_COLUMNS = [
  { title: 'Queue', key: 'queue', show: c => c.queue },
  { title: 'Connection', key: 'connection', show: c => c.connection },
  { title: 'Tag', key: 'tag', number: true, show: c => c.tag },
  { title: 'Credit', key: 'credit', number: true, show: c => count(c.credit) },
  { title: 'Unacked', key: 'unacked', number: true, show: c => count(c.unackedMessages) },
];

const PRODUCER_COLUMNS = [
  { title: 'Queue', key: 'queue', show: p => p.queue },
  { title: 'Connection', key: 'connection', show: p => p.connection },
  { title: 'Flow', key: 'flow', show: p => flow(p) },
];

const CONNECTION_COLUMNS = [
  { title: 'Connection', key: 'id', show: c => c.id },
  { title: 'Remote address', key: 'remote', show: c => c.remoteAddress },
  { title: 'Client', key: 'client', show: c => c.client },
  { title: 'User', key: 'user', show: c => c.user || '(anonymous)' },
  { title: 'Received MiB', key: 'received', number: true, show: c => mebibytes(c.bytesReceived) },
  { title: 'Sent MiB', key: 'sent', number: true, show: c => mebibytes(c.bytesSent) },
];

function overviewPage(main) {
  const queues = el('section', { id: 'queues' });
  const consumers = el('section', { id: 'consumers' });
  const producers = el('section', { id: 'producers' });
  const connections = el('section', { id: 'connections' });
  main.replaceChildren(
    el('h1', {}, 'Queues'), queues,
    el('h2', {}, 'Consumers'), consumers,
    el('h2', {}, 'Producers'), producers,
    el('h2', {}, 'Connections'), connections);
  return {
    async load() {
      const [q, c, p, n] = await Promise.all([api('GET', '/api/queues'), api('GET', '/api/consumers'),
        api('GET', '/api/producers'), api('GET', '/api/connections')]);
      return { queues: q, consumers: c, producers: p, connections: n };
    },
    update(data) {
      data.queues.forEach(remember);
      queues.replaceChildren(table(QUEUE_COLUMNS, data.queues, 'no queues (or none this user may see)',
        q => ({ dataset: { queue: q.name } })));
      consumers.replaceChildren(table(CONSUMER_COLUMNS, data.consumers, 'no consumers'));
      producers.replaceChildren(table(PRODUCER_COLUMNS, data.producers, 'no producers',
        p => ({ dataset: { queue: p.queue, connection: p.connection } })));
      connections.replaceChildren(table(CONNECTION_COLUMNS, data.connections, 'no connections (or none this user may see)'));
    },
  };
}

function settingsRows(queue) {
  const s = queue.settings || {};
  const limit = (n, unit) => (n > 0 ? (unit === 'bytes' ? bytes(n) : count(n) + ' ' + unit) : 'none');
  return [
    ['Durability', queue.durability],
    ['Max deliveries', s.maxDeliveries > 0 ? count(s.maxDeliveries) : 'unlimited'],
    ['Dead-letter queue', s.deadLetterQueue || 'none'],
    ['Ack timeout', s.ackTimeoutMs > 0 ? count(s.ackTimeoutMs) + ' ms' : 'none'],
    ['Soft quota', limit(s.quotaSoftMessages, 'messages') + ' / ' + limit(s.quotaSoftBytes, 'bytes')],
    ['Hard quota', limit(s.quotaHardMessages, 'messages') + ' / ' + limit(s.quotaHardBytes, 'bytes')],
    ['Overflow policy', s.overflowPolicy || ''],
  ];
}

function figureRows(queue) {
  const c = queue.counters || {};
  const r = queue.rates || {};
  return [
    ['Backlog', count(queue.backlogMessages) + ' messages, ' + mebibytes(queue.backlogBytes) + ' MiB'],
    ['Ready / unacked', count(queue.readyMessages) + ' / ' + count(queue.unackedMessages)],
    ['Oldest unacked message', age(queue.oldestUnackedAgeSeconds)],
    ['Oldest ready message', age(queue.oldestReadyAgeSeconds)],
    ['Published / delivered / acked per s', rateOf(queue, 'publishedPerSecond') + ' / ' + rateOf(queue, 'deliveredPerSecond')
      + ' / ' + rateOf(queue, 'ackedPerSecond') + (r.intervalMs ? ' (over ' + (r.intervalMs / 1000).toFixed(0) + ' s)' : '')],
    ['Consumers / producers', count(queue.consumers) + ' / ' + count(queue.producers)],
    ['Published / acked in total', count(c.published) + ' / ' + count(c.acked)],
    ['Dead-lettered / dropped / refused', count(c.deadLettered) + ' / ' + count(c.dropped) + ' / ' + count(c.publishRefused)],
    ['Disk', count(queue.segments) + ' segments, ' + mebibytes(queue.diskBytes) + ' MiB'],
  ];
}

function keyValueTable(rows, id) {
  return el('table', { id }, el('tbody', {}, rows.map(([k, v]) => el('tr', {}, el('th', {}, k), el('td', {}, v)))));
}

function queuePage(main, name) {
  const title = el('h1', {}, el('span', { id: 'queue-name' }, name), el('span', { id: 'queue-flow' }));
  const confirmation = el('div', { id: 'confirmation' });
  const figures = el('div');
  const settings = el('div');
  const backlogChart = el('div');
  const rateChart = el('div');
  let latest = null;

  function ask(action) {
    const backlog = latest ? count(latest.backlogMessages) : '?';
    const question = action === 'purge'
      ? 'Purge queue \u2018' + name + '\u2019? Every message not out with a consumer is removed (backlog now ' + backlog
        + ' messages). This cannot be undone.'
      : 'Delete queue \u2018' + name + '\u2019 and all its ' + backlog + ' messages? This cannot be undone.';
    confirmation.replaceChildren(el('div', { class: 'confirmation' },
      el('p', {}, question),
      el('div', { class: 'actions' },
        el('button', { id: 'confirm-' + action, type: 'button', class: 'danger confirm', onclick: () => act(action) },
          action === 'purge' ? 'Purge' : 'Delete'),
        el('button', { id: 'cancel', type: 'button', onclick: () => confirmation.replaceChildren() }, 'Cancel'))));
  }

  async function act(action) {
    confirmation.replaceChildren();
    try {
      if (action === 'purge') {
        const result = await api('POST', queuePath(name) + '/purge');
        notice('Purged ' + count(result.purgedMessages) + ' messages from queue \u2018' + name + '\u2019.', false);
        poll();
      } else {
        await api('DELETE', queuePath(name));
        state.history.delete(name);
        notice('Deleted queue \u2018' + name + '\u2019.', false);
        location.hash = '#/';
      }
    } catch (e) {
      handleError(e);
    }
  }

  main.replaceChildren(
    el('p', {}, el('a', { href: '#/' }, '\u2190 all queues')),
    title,
    el('div', { class: 'actions' },
      el('button', { id: 'purge', type: 'button', class: 'danger', onclick: () => ask('purge') }, 'Purge\u2026'),
      el('button', { id: 'delete', type: 'button', class: 'danger', onclick: () => ask('delete') }, 'Delete\u2026')),
    confirmation,
    el('div', { class: 'charts' },
      el('figure', {}, el('figcaption', {}, 'Backlog'), backlogChart,
        el('div', { class: 'legend' }, el('span', {}, el('span', { class: 'swatch swatch-backlog' }), 'messages'))),
      el('figure', {}, el('figcaption', {}, 'Rates'), rateChart,
        el('div', { class: 'legend' },
          el('span', {}, el('span', { class: 'swatch swatch-published' }), 'published/s'),
          el('span', {}, el('span', { class: 'swatch swatch-acked' }), 'acked/s')))),
    el('div', { class: 'grid' },
      el('section', {}, el('h2', {}, 'Figures'), figures),
      el('section', {}, el('h2', {}, 'Settings'), settings)));
  return {
    async load() {
      return api('GET', queuePath(name));
    },
    update(queue) {
      latest = queue;
      remember(queue);
      document.getElementById('queue-flow').replaceChildren(...flow(queue).filter(Boolean));
      figures.replaceChildren(keyValueTable(figureRows(queue), 'figures'));
      settings.replaceChildren(keyValueTable(settingsRows(queue), 'settings'));
      const points = state.history.get(name) || [];
      backlogChart.replaceChildren(chart(points, ['backlog'], 'messages'));
      rateChart.replaceChildren(chart(points, ['published', 'acked'], 'messages/s'));
    },
  };
}

// ---- navigation, polling, login ----------------------------------------------------------------

function handleError(e) {
  if (e.status === 401) {
    showLogin(state.authorization ? e.message : '');
    return;
  }
  notice(e.message, true);
}

async function poll() {
  clearTimeout(state.timer);
  const generation = state.generation;
  const view = state.view;
  try {
    const data = await view.load();
    if (generation !== state.generation) {
      return;
    }
    view.update(data);
    document.getElementById('updated').textContent = 'updated ' + new Date().toLocaleTimeString('en-GB');
    if (document.getElementById('notice').className === 'error') {
      notice('', false);
    }
  } catch (e) {
    if (generation !== state.generation) {
      return;
    }
    handleError(e);
    if (e.status === 401) {
      return; // no polling behind the login form
    }
  }
  state.timer = setTimeout(poll, POLL_MS);
}

function navigate() {
  state.generation++;
  clearTimeout(state.timer);
  const main = document.getElementById('main');
  const match = location.hash.match(/^#\/queue\/(.+)$/);
  state.view = match ? queuePage(main, decodeURIComponent(match[1])) : overviewPage(main);
  poll();
}

function showLogin(problem) {
  clearTimeout(state.timer);
  document.getElementById('main').hidden = true;
  document.getElementById('login').hidden = false;
  document.getElementById('login-error').textContent = problem || '';
  document.getElementById('login-user').focus();
}

function basic(user, password) {
  const bytes = new TextEncoder().encode(user + ':' + password);
  let binary = '';
  bytes.forEach(b => { binary += String.fromCharCode(b); });
  return 'Basic ' + btoa(binary);
}

function showUser() {
  document.getElementById('whoami').textContent = state.user ? 'user ' + state.user : '';
  document.getElementById('logout').hidden = !state.authorization;
}

async function logIn(event) {
  event.preventDefault();
  const user = document.getElementById('login-user').value;
  state.authorization = basic(user, document.getElementById('login-password').value);
  try {
    await api('GET', '/api/queues');
  } catch (e) {
    state.authorization = null;
    document.getElementById('login-error').textContent = e.message;
    return;
  }
  state.user = user;
  sessionStorage.setItem(AUTH_KEY, state.authorization);
  sessionStorage.setItem(AUTH_KEY + '.user', user);
  document.getElementById('login-password').value = '';
  document.getElementById('login').hidden = true;
  document.getElementById('main').hidden = false;
  showUser();
  navigate();
}

function logOut() {
  sessionStorage.removeItem(AUTH_KEY);
  sessionStorage.removeItem(AUTH_KEY + '.user');
  state.authorization = null;
  state.user = null;
  showUser();
  showLogin('');
}

document.getElementById('login').addEventListener('submit', logIn);
document.getElementById('logout').addEventListener('click', logOut);
window.addEventListener('hashchange', () => {
  notice('', false);
  navigate();
});
showUser();
navigate();
