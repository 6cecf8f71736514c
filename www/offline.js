// Registers the service worker (sw.js) that lets the page open and analyze with no network after
// the first visit, once the page has loaded (its install fetches the site's files again). A
// relative URL: its scope is the folder the site is served from (any sub-path). Browsers offer
// service workers only on https and on localhost.
if ('serviceWorker' in navigator && /^https?:$/.test(location.protocol)) {
  addEventListener('load', () => {
    navigator.serviceWorker.register('./sw.js').catch((e) => {
      console.warn(`TorchTraceAP works online only here: its service worker did not register (${e})`);
    });
  });
}
