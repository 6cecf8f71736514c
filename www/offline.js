// Registers the service worker (sw.js) that lets the page open and analyze with no network after
// the first visit. A relative URL: its scope is the folder the site is served from (any
// sub-path). Browsers offer service workers only on https and on localhost.
if ('serviceWorker' in navigator && /^https?:$/.test(location.protocol)) {
  navigator.serviceWorker.register('./sw.js').catch((e) => {
    console.warn(`TorchTraceAP works online only here: its service worker did not register (${e})`);
  });
}
