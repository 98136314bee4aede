// ReadPast live updates. Pages are complete without this script; it only keeps
// them current over the websocket at /ws: counts (data-live), flags
// (data-live-flag), whole fragments (data-live-html) and table rows by id
// (data-live-rows). The server sends a full snapshot on connect and then what
// changed, at most a couple of times a second. A dropped socket reconnects
// with back-off (0.5 s doubling to 10 s) and the new snapshot resynchronises.
(function () {
  'use strict';

  var body = document.body;
  var view = body.getAttribute('data-live-view');
  if (!view || !('WebSocket' in window)) {
    return;
  }
  var query = body.getAttribute('data-live-query') || '';
  var status = document.getElementById('live-status');
  var csrfField = meta('csrf-field');
  var csrfToken = meta('csrf-token');
  var minDelay = 500;
  var maxDelay = 10000;
  var delay = minDelay;
  var socket = null;

  function meta(name) {
    var m = document.querySelector('meta[name="' + name + '"]');
    return m ? m.getAttribute('content') : '';
  }

  function setStatus(state, title) {
    if (!status) {
      return;
    }
    status.className = 'live ' + state;
    status.title = title;
  }

  function connect() {
    var proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    var url = proto + '//' + location.host + '/ws?view=' + encodeURIComponent(view) + (query ? '&' + query : '');
    var ws;
    try {
      ws = new WebSocket(url);
    } catch (e) {
      retry();
      return;
    }
    socket = ws;
    setStatus('connecting', 'connecting…');
    ws.onmessage = function (ev) {
      var msg;
      try {
        msg = JSON.parse(ev.data);
      } catch (e) {
        return;
      }
      if (msg.snapshot) {
        delay = minDelay;
        setStatus('on', 'live: updates arrive as they happen');
      }
      apply(msg);
    };
    ws.onclose = function () {
      if (socket === ws) {
        socket = null;
        retry();
      }
    };
  }

  function retry() {
    var wait = delay * (0.75 + Math.random() * 0.5);
    delay = Math.min(delay * 2, maxDelay);
    setStatus('off', 'disconnected: retrying in ' + Math.round(wait / 100) / 10 + ' s');
    window.setTimeout(connect, wait);
  }

  // resync drops the socket; the reconnect brings a full snapshot.
  function resync() {
    if (socket) {
      socket.close();
    }
  }

  function apply(msg) {
    if (msg.fields) {
      applyFields(msg.fields, !!msg.snapshot);
    }
    if (msg.sections) {
      Object.keys(msg.sections).forEach(function (name) {
        var el = document.querySelector('[data-live-html="' + cssEscape(name) + '"]');
        if (el) {
          el.innerHTML = msg.sections[name];
          fillCSRF(el);
        }
      });
    }
    if (msg.order || msg.rows) {
      var tbody = document.querySelector('[data-live-rows]');
      if (tbody) {
        applyRows(tbody, msg.order, msg.rows || {}, !!msg.snapshot);
      }
    }
  }

  function applyFields(fields, snapshot) {
    var els = document.querySelectorAll('[data-live]');
    for (var i = 0; i < els.length; i++) {
      var v = fields[els[i].getAttribute('data-live')];
      if (v !== undefined && els[i].textContent !== v) {
        els[i].textContent = v;
        if (!snapshot) {
          mark(els[i]);
        }
      }
    }
    var sets = document.querySelectorAll('[data-live-set]');
    for (var k = 0; k < sets.length; k++) {
      var set = fields[sets[k].getAttribute('data-live-set')];
      if (set !== undefined && set !== sets[k].getAttribute('data-live-value')) {
        reloadWhenIdle(); // rows were added or removed: the server renders them
      }
    }
    var flags = document.querySelectorAll('[data-live-flag]');
    for (var j = 0; j < flags.length; j++) {
      var f = fields[flags[j].getAttribute('data-live-flag')];
      if (f !== undefined) {
        flags[j].classList.toggle('hidden', f !== 'true');
        var row = flags[j].closest('tr');
        if (row) {
          row.classList.toggle('paused', f === 'true');
          setToggle(row.querySelector('form.toggle'), f === 'true');
        }
      }
    }
  }

  // setToggle makes a row's pause/resume form offer what the flag now allows:
  // a queue paused elsewhere gets Resume, as the server would render it.
  function setToggle(form, paused) {
    if (!form) {
      return;
    }
    var input = form.querySelector('input[name="paused"]');
    var button = form.querySelector('button');
    if (!input || !button) {
      return;
    }
    input.value = paused ? 'false' : 'true';
    button.textContent = paused ? 'Resume' : 'Pause';
    button.className = 'btn ' + (paused ? 'resume' : 'pause');
    button.title = paused ? 'start claiming again' : 'stop new claims; running tasks finish';
  }

  function applyRows(tbody, order, rows, snapshot) {
    var byId = {};
    var kids = tbody.children;
    for (var i = 0; i < kids.length; i++) {
      byId[kids[i].getAttribute('data-id')] = kids[i];
    }
    Object.keys(rows).forEach(function (id) {
      var row = parseRow(rows[id]);
      if (!row) {
        return;
      }
      var old = byId[id];
      if (old && old.parentNode === tbody) {
        keepPicked(old, row);
        tbody.replaceChild(row, old);
      }
      byId[id] = row;
      if (!snapshot) {
        mark(row);
      }
    });
    if (order) {
      var cur = tbody.firstElementChild;
      for (var k = 0; k < order.length; k++) {
        var tr = byId[order[k]];
        if (!tr) {
          resync(); // a row we were never sent: start again from a snapshot
          return;
        }
        if (tr === cur) {
          cur = cur.nextElementSibling;
        } else {
          tbody.insertBefore(tr, cur);
        }
      }
      while (cur) {
        var next = cur.nextElementSibling;
        tbody.removeChild(cur);
        cur = next;
      }
    }
    var empty = document.querySelector('[data-live-empty]');
    if (empty) {
      empty.classList.toggle('hidden', tbody.children.length > 0);
    }
  }

  // keepPicked carries a row's bulk-selection checkbox over to its new
  // version, so a live update does not drop what the operator selected.
  function keepPicked(old, row) {
    var was = old.querySelector('input[type=checkbox][name=id]');
    var now = row.querySelector('input[type=checkbox][name=id]');
    if (was && now) {
      now.checked = was.checked;
    }
  }

  // reloadWhenIdle reloads the page, but not under an operator who is typing
  // into one of its forms: then once the field has lost focus.
  var reloading = false;
  function reloadWhenIdle() {
    if (reloading) {
      return;
    }
    reloading = true;
    var el = document.activeElement;
    if (el && el.form && /^(INPUT|SELECT|TEXTAREA)$/.test(el.tagName)) {
      // Polled: a page without window focus gets no blur event.
      var wait = window.setInterval(function () {
        if (document.activeElement !== el) {
          window.clearInterval(wait);
          location.reload();
        }
      }, 250);
      return;
    }
    location.reload();
  }

  function parseRow(html) {
    var t = document.createElement('template');
    t.innerHTML = html.trim();
    var row = t.content.firstElementChild;
    if (row) {
      fillCSRF(row);
    }
    return row;
  }

  // Rows and sections come without the CSRF token (one rendering serves every
  // client); the page's own token goes into their forms here.
  function fillCSRF(root) {
    var inputs = root.querySelectorAll('input.csrf');
    for (var i = 0; i < inputs.length; i++) {
      inputs[i].name = csrfField;
      inputs[i].value = csrfToken;
    }
  }

  function mark(el) {
    el.classList.remove('changed');
    void el.offsetWidth; // restart the highlight
    el.classList.add('changed');
    window.setTimeout(function () {
      el.classList.remove('changed');
    }, 1600);
  }

  function cssEscape(s) {
    return window.CSS && CSS.escape ? CSS.escape(s) : s.replace(/["\\]/g, '\\$&');
  }

  connect();
})();
