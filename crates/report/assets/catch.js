// Errors of the page's script are shown on the page (and read by the browser test).
(function () {
  var box = document.getElementById('js-errors');
  function add(m) { box.hidden = false; box.textContent += m + '\n'; }
  window.addEventListener('error', function (e) {
    add('error: ' + e.message + ' (' + (e.filename || '') + ':' + (e.lineno || 0) + ')');
  });
  window.addEventListener('unhandledrejection', function (e) { add('unhandled rejection: ' + e.reason); });
  var ce = console.error;
  console.error = function () { add('console.error: ' + Array.prototype.join.call(arguments, ' ')); ce.apply(console, arguments); };
})();
