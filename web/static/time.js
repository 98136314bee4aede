// ReadPast time zone toggle. Pages render every time in UTC, in <time
// datetime="RFC 3339"> elements; this script shows them in the browser's zone
// instead when the operator asks, and remembers the choice per browser
// (localStorage). Rows the websocket adds are converted as they arrive. Date
// fields marked data-utc-input hold UTC on the wire: shown in the chosen
// zone, and sent back as an RFC 3339 instant when the zone is local.
(function () {
  'use strict';

  var key = 'readpast-tz';
  var button = document.getElementById('tz-toggle');
  var local = false;
  try {
    local = window.localStorage.getItem(key) === 'local';
  } catch (e) {
    local = false;
  }

  function pad(n) {
    return (n < 10 ? '0' : '') + n;
  }

  function dateOf(d) {
    return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate());
  }

  // show writes one <time> in the chosen zone, with the precision the server
  // chose for it: a time of day, or a date and minutes.
  function show(el) {
    if (el.children.length > 0) {
      return; // fire times carry their own zones
    }
    if (!el.hasAttribute('data-utc')) {
      el.setAttribute('data-utc', el.textContent);
    }
    var utc = el.getAttribute('data-utc');
    var d = new Date(el.getAttribute('datetime'));
    if (!local || isNaN(d.getTime())) {
      el.textContent = utc;
      return;
    }
    var hm = pad(d.getHours()) + ':' + pad(d.getMinutes());
    if (/^\d{4}-\d\d-\d\d/.test(utc)) {
      el.textContent = dateOf(d) + ' ' + hm;
    } else if (dateOf(d) !== dateOf(new Date())) {
      el.textContent = dateOf(d) + ' ' + hm;
    } else {
      el.textContent = hm + ':' + pad(d.getSeconds());
    }
  }

  function showAll(root) {
    var els = root.querySelectorAll('time[datetime]');
    for (var i = 0; i < els.length; i++) {
      show(els[i]);
    }
  }

  // Inputs hold "YYYY-MM-DDTHH:MM" in UTC as rendered; in local mode they
  // show (and take) the browser's wall-clock time.
  function showInputs() {
    var inputs = document.querySelectorAll('input[data-utc-input]');
    for (var i = 0; i < inputs.length; i++) {
      var el = inputs[i];
      if (!el.hasAttribute('data-utc-value')) {
        el.setAttribute('data-utc-value', el.value);
      }
      var utc = el.getAttribute('data-utc-value');
      if (!local || utc === '') {
        el.value = utc;
        continue;
      }
      var d = new Date(utc + 'Z');
      if (!isNaN(d.getTime())) {
        el.value = dateOf(d) + 'T' + pad(d.getHours()) + ':' + pad(d.getMinutes());
      }
    }
  }

  // On submit in local mode, a date field is sent as the instant it means.
  document.addEventListener('submit', function (ev) {
    if (!local) {
      return;
    }
    var inputs = ev.target.querySelectorAll('input[data-utc-input]');
    for (var i = 0; i < inputs.length; i++) {
      var v = inputs[i].value;
      if (/^\d{4}-\d\d-\d\dT\d\d:\d\d/.test(v)) {
        var d = new Date(v); // no zone: the browser's local time
        if (!isNaN(d.getTime())) {
          var hidden = document.createElement('input');
          hidden.type = 'hidden';
          hidden.name = inputs[i].name;
          hidden.value = d.toISOString();
          inputs[i].name = '';
          inputs[i].parentNode.appendChild(hidden);
        }
      }
    }
  }, true);

  function label() {
    if (!button) {
      return;
    }
    var zone = '';
    try {
      zone = Intl.DateTimeFormat().resolvedOptions().timeZone || '';
    } catch (e) {
      zone = '';
    }
    button.textContent = local ? 'local' : 'UTC';
    button.title = local ? 'times are in this browser\'s zone' + (zone ? ' (' + zone + ')' : '') + ': click for UTC'
      : 'times are UTC: click for this browser\'s zone';
    button.setAttribute('aria-pressed', local ? 'true' : 'false');
  }

  function apply() {
    label();
    showAll(document);
    showInputs();
  }

  if (button) {
    button.disabled = false;
    button.addEventListener('click', function () {
      local = !local;
      try {
        window.localStorage.setItem(key, local ? 'local' : 'utc');
      } catch (e) {
        // a browser without storage still toggles this page
      }
      apply();
    });
  }

  if ('MutationObserver' in window) {
    new MutationObserver(function (records) {
      if (!local) {
        return;
      }
      for (var i = 0; i < records.length; i++) {
        for (var j = 0; j < records[i].addedNodes.length; j++) {
          var n = records[i].addedNodes[j];
          if (n.nodeType !== 1) {
            continue;
          }
          if (n.matches('time[datetime]')) {
            show(n);
          } else {
            showAll(n);
          }
        }
      }
    }).observe(document.body, { childList: true, subtree: true });
  }

  apply();
})();
