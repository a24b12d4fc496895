// agentmux's service worker: it acts on the buttons of the notifications
// the page shows through it (src/views/notify.ts). Allow and Deny type the
// permission dialog's keys, which the page put in the notification's data,
// through POST api/sessions/:id/input: that works with no page open, and
// with pages open but none focused, and the server types them only while
// the session still waits at that very request. Open (or a click on the
// notification) brings a page of agentmux forward on that session.
//
// The hub's page (agentmux hub, src/hub/notify.ts) shows its notifications
// through the same worker, with data.hub: their Allow and Deny go through
// the hub (POST api/inbox/answer), which hands them to the session's
// workspace, and Open opens the session in its workspace's own page
// (data.openUrl), in a window of its own.
//
// A session's pull request (issue 46) is notified when its checks turn to
// failing, with Fix checks, or its review to changes requested, with
// Address review: the same POSTs as the ship bar's buttons
// (api/sessions/:id/pull-request/fix-checks, …/address-review). Address
// review fills the session's review draft, which a person checks before it
// goes to the agent: a page is brought forward on the Changes view.
//
// It has no fetch handler on purpose: the UI is never served from a cache
// of the worker's, so a new build is picked up as the server serves it.
// Every URL is relative to the worker's scope, the page's directory, so it
// also works under a proxy's path.

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

self.addEventListener('notificationclick', (event) => event.waitUntil(click(event.notification, event.action)));

/** What a click on a notification (action '' for its body) does. */
async function click(notification, action) {
  notification.close();
  const d = notification.data || {};
  if (d.hub) return hubClick(d, action);
  if ((action === 'allow' || action === 'deny') && d.sessionId && d.keys) {
    return answer(d, action === 'allow' ? d.keys.allow : d.keys.deny);
  }
  if ((action === 'fix-checks' || action === 'address-review') && d.sessionId && d.pullRequest) {
    return pullRequestAction(d, action);
  }
  return open(d.sessionId);
}

/**
 * Both go as the name the page went by (who asks the agent, whose the
 * draft's comments are): Fix checks queues the prompt for the agent,
 * Address review fills the review draft, then shows it. Either says so
 * in a notification of its own when it did not go.
 */
async function pullRequestAction(d, action) {
  const body = d.by ? { by: d.by } : {};
  const why = await post(`api/sessions/${encodeURIComponent(d.sessionId)}/pull-request/${action}`, body, 'agentmux');
  if (why === null) {
    if (action === 'address-review') await open(d.sessionId, 'changes');
    return;
  }
  await self.registration.showNotification(`${d.name || 'agentmux'}: #${d.pullRequest} ${action === 'fix-checks' ? 'checks not sent to the agent' : 'review not fetched'}`, {
    body: why,
    tag: `agentmux-${d.sessionId}-pr-not-done`,
    data: { sessionId: d.sessionId, name: d.name },
  });
}

/** Types an answer into the session; says so in a notification of its own when it did not go. */
async function answer(d, data) {
  const why = await post(`api/sessions/${encodeURIComponent(d.sessionId)}/input`, { data, permission: d.permission }, 'agentmux');
  if (why === null) return;
  await self.registration.showNotification(`${d.name || 'agentmux'}: not answered`, {
    body: why,
    tag: `agentmux-${d.sessionId}-not-answered`,
    data: { sessionId: d.sessionId, name: d.name },
  });
}

/**
 * POSTs body as JSON to path (relative to the worker's scope); resolves
 * null when it went, else why not, in words (the API's message when it
 * gave one).
 */
async function post(path, body, server) {
  try {
    const res = await fetch(new URL(path, self.registration.scope), {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
      credentials: 'same-origin',
    });
    if (res.ok) return null;
    try {
      return (await res.json()).error.message || `HTTP ${res.status}`;
    } catch {
      // not the API's error shape: the status says enough
      return `HTTP ${res.status}`;
    }
  } catch {
    return `${server} could not be reached.`;
  }
}

/**
 * A hub notification: Allow and Deny answer the permission it showed,
 * through the hub, naming who answers as the page knew it; anything else
 * opens the session in its workspace's page.
 */
async function hubClick(d, action) {
  if ((action === 'allow' || action === 'deny') && d.sessionId && d.permission) {
    const body = { workspace: d.workspace, sessionId: d.sessionId, answer: action, permission: d.permission };
    if (d.by) body.by = d.by;
    const why = await post('api/inbox/answer', body, 'the hub');
    if (why === null) return;
    // Its click opens the session, where it can be answered by hand.
    await self.registration.showNotification(`${d.name || 'agentmux'} (${d.workspaceName || 'a workspace'}): not answered`, {
      body: why,
      tag: `agentmux-hub-${d.workspace}-${d.sessionId}-not-answered`,
      data: { hub: true, workspace: d.workspace, workspaceName: d.workspaceName, sessionId: d.sessionId, name: d.name, openUrl: d.openUrl },
    });
    return;
  }
  if (d.openUrl) await self.clients.openWindow(d.openUrl);
}

/** Brings a page of this agentmux forward on the session (in view, when given: changes), or opens one. */
async function open(sessionId, view) {
  const windows = (await self.clients.matchAll({ type: 'window', includeUncontrolled: true }))
    .filter((c) => c.url.startsWith(self.registration.scope));
  const page = windows.find((c) => c.focused) || windows[0];
  if (page) {
    if (sessionId) page.postMessage(view ? { type: 'agentmux.open', sessionId, view } : { type: 'agentmux.open', sessionId });
    try {
      await page.focus();
    } catch {
      // focus needs the click's user activation, which a test's call has not
    }
    return;
  }
  const url = new URL('./', self.registration.scope);
  if (sessionId) url.searchParams.set('session', sessionId);
  if (sessionId && view) url.searchParams.set('view', view);
  await self.clients.openWindow(url.href);
}

// The UI tests call this with a notification and an action: a browser
// offers scripts no way to click a notification, and an event a script
// makes is refused waitUntil.
self.agentmuxNotificationClick = click;
