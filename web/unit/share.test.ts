// Read-only links without a browser: the link built next to the page
// (under a proxy's path too), the secret read from the fragment, the
// viewer's socket address, how expiries and links read, what each way the
// viewer's socket ends leads to, the viewer's state, and viewers in the
// participants model (never typists).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  describeShare, expiresIn, liveShares, secretFromHash, shareLink, shareSocketURL, viewersText, type Share,
} from '../src/models/shares';
import { CLOSE_LINK_ENDED, ViewerState, afterProbe, isServerAnswer, onSocketClose, statusLabel } from '../src/share/viewer';
import { Participants, isViewer } from '../src/models/participants';
import type { ShareWelcomeMessage } from '../src/shared/types';

/** Read through a function: after assert.equal(v.ended, null) TypeScript takes it for null for good. */
const endedKind = (v: ViewerState) => v.ended?.kind;

const T = Date.UTC(2026, 4, 1, 12, 0, 0);
const at = (s: number) => new Date(T + s * 1000).toISOString();

test('the link is share.html next to the page, with the secret from the server\'s reply', () => {
  const reply = 'http://127.0.0.1:8080/share.html#s3cr3t-AbC_9';
  assert.equal(shareLink(reply, 'http://127.0.0.1:8080/'), 'http://127.0.0.1:8080/share.html#s3cr3t-AbC_9');
  // Behind a path-prefix proxy the server's url lacks the prefix; the page's base has it.
  assert.equal(shareLink(reply, 'https://host.example/proxy/8080/'), 'https://host.example/proxy/8080/share.html#s3cr3t-AbC_9');
  // A base that is a page, with a query and a fragment of its own.
  assert.equal(shareLink(reply, 'https://host.example/proxy/8080/index.html?session=x#y'), 'https://host.example/proxy/8080/share.html#s3cr3t-AbC_9');
});

test('the secret is the fragment, and an empty fragment has none', () => {
  assert.equal(secretFromHash('#abc123'), 'abc123');
  assert.equal(secretFromHash('abc123'), 'abc123');
  assert.equal(secretFromHash('#a%2Db'), 'a-b');
  assert.equal(secretFromHash(''), null);
  assert.equal(secretFromHash('#'), null);
  assert.equal(secretFromHash('#   '), null);
  assert.equal(secretFromHash('#%E0%A4%A'), '%E0%A4%A', 'a broken escape is kept as it is, for the server to refuse');
});

test('the viewer\'s socket is ws?share= next to the page, never carrying the fragment', () => {
  assert.equal(shareSocketURL('http://127.0.0.1:8080/share.html#sec', 'sec'), 'ws://127.0.0.1:8080/ws?share=sec');
  assert.equal(shareSocketURL('https://h.example/proxy/8080/share.html#x', 'a+b/c'), 'wss://h.example/proxy/8080/ws?share=a%2Bb%2Fc');
});

test('expiries read as time left', () => {
  const now = T;
  assert.equal(expiresIn(at(-1), now), 'expired');
  assert.equal(expiresIn(at(0), now), 'expired');
  assert.equal(expiresIn(at(30), now), 'in less than a minute');
  assert.equal(expiresIn(at(45 * 60 + 59), now), 'in 45 min');
  assert.equal(expiresIn(at(3600), now), 'in 1 h');
  assert.equal(expiresIn(at(2 * 3600 + 15 * 60), now), 'in 2 h 15 min');
  assert.equal(expiresIn(at(86400 - 1), now), 'in 23 h');
  assert.equal(expiresIn(at(7 * 86400), now), 'in 7 days');
  assert.equal(expiresIn('not a time', now), 'at an unknown time');
});

const share = (over: Partial<Share> & { id: string }): Share => ({
  sessionId: 's1', createdAt: at(0), expiresAt: at(86400), scrollback: true, createdBy: 'alice', viewers: 0, ...over,
});

test('the dialog lists the live links, newest first, each with who made it, its expiry and its viewers', () => {
  const list = [
    share({ id: 'old', createdAt: at(-100) }),
    share({ id: 'gone', expiresAt: at(-1) }),
    share({ id: 'new', createdAt: at(-10), viewers: 2, scrollback: false, createdBy: '' }),
  ];
  assert.deepEqual(liveShares(list, T).map((s) => s.id), ['new', 'old']);
  assert.equal(describeShare(list[0]!, T), 'by alice · expires in 24 h · no viewers');
  assert.equal(describeShare(list[2]!, T), 'by someone · expires in 24 h · 2 viewers · screen only');
  assert.equal(viewersText(1), '1 viewer');
});

test('a close with 4403 ends the link with the server\'s reason; others reconnect, and a refusal before opening is probed', () => {
  const revoked = onSocketClose({ code: CLOSE_LINK_ENDED, reason: 'this read-only link was revoked', opened: true });
  assert.equal(revoked.action, 'end');
  assert.ok(revoked.action === 'end' && revoked.ending.kind === 'ended');
  assert.ok(revoked.action === 'end' && revoked.ending.title === 'This read-only link was revoked');
  const deleted = onSocketClose({ code: CLOSE_LINK_ENDED, reason: 'the session was deleted', opened: true });
  assert.ok(deleted.action === 'end' && /nothing more to watch/.test(deleted.ending.detail));
  const bare = onSocketClose({ code: CLOSE_LINK_ENDED, reason: '', opened: true });
  assert.ok(bare.action === 'end' && bare.ending.title === 'This read-only link ended');
  assert.deepEqual(onSocketClose({ code: 1006, reason: '', opened: true }), { action: 'reconnect' });
  assert.deepEqual(onSocketClose({ code: 1001, reason: 'going away', opened: true }), { action: 'reconnect' });
  assert.deepEqual(onSocketClose({ code: 1006, reason: '', opened: false }), { action: 'probe' });
  // The probe: the server answered, so the socket was refused for its secret; else it is away.
  const refused = afterProbe(true);
  assert.ok(refused.action === 'end' && refused.ending.kind === 'refused' && /expired or was revoked/.test(refused.ending.title));
  assert.deepEqual(afterProbe(false), { action: 'reconnect' });
  assert.equal(isServerAnswer(200), true);
  assert.equal(isServerAnswer(404), true);
  assert.equal(isServerAnswer(502), false, 'a proxy whose upstream is down');
});

test('the viewer follows its session: welcome, status, size, deletion; another session\'s news is not its own', () => {
  const v = new ViewerState();
  let changes = 0;
  v.subscribe(() => changes++);
  const welcome: ShareWelcomeMessage = {
    type: 'share.welcome', shareId: 'sh-1', expiresAt: at(3600), scrollback: false,
    session: { id: 's1', name: 'build', agent: 'claude', status: 'active', running: true, cols: 120, rows: 40 },
  };
  assert.equal(v.apply(welcome), true);
  assert.equal(v.session?.name, 'build');
  assert.equal(v.scrollback, false);
  assert.equal(v.apply({ type: 'session.status', sessionId: 's2', status: 'waiting' }), false);
  assert.equal(v.apply({ type: 'session.status', sessionId: 's1', status: 'waiting' }), true);
  assert.equal(v.session?.status, 'waiting');
  assert.equal(v.session?.running, true, 'waiting runs when the trimmed status leaves running out');
  v.apply({ type: 'session.status', sessionId: 's1', status: 'stopped', running: false });
  assert.equal(statusLabel(v.session!.status, v.session!.running), 'exited');
  v.apply({ type: 'session.resized', sessionId: 's1', cols: 80, rows: 24 });
  assert.deepEqual([v.session?.cols, v.session?.rows], [80, 24]);
  assert.equal(v.ended, null);
  v.apply({ type: 'session.destroyed', sessionId: 's1' });
  assert.equal(endedKind(v), 'destroyed');
  const before = changes;
  assert.equal(v.apply({ type: 'session.status', sessionId: 's1', status: 'active' }), false, 'nothing moves once ended');
  v.end({ kind: 'refused', title: '', detail: '' });
  assert.equal(endedKind(v), 'destroyed', 'the first ending stands');
  assert.equal(changes, before);
});

test('statuses read as the viewer\'s header says them', () => {
  assert.equal(statusLabel('active', true), 'running');
  assert.equal(statusLabel('waiting', true), 'waiting for input');
  assert.equal(statusLabel('idle', true), 'idle');
  assert.equal(statusLabel('idle', false), 'not running');
  assert.equal(statusLabel('error', false), 'failed');
});

test('a viewer is listed among the participants but never types, nor lends a name its colour', () => {
  const people = new Participants();
  const now = Date.now();
  people.set({
    type: 'session.participants', sessionId: 's1', participants: [
      { id: 'c1', name: 'alice', color: '#98c379', viewing: true, lastInputAt: now - 60_000 },
      { id: 'v1', name: 'viewer', color: '#8b949e', viewing: true, viewer: true, lastInputAt: now },
    ],
  });
  const [alice, viewer] = people.get('s1');
  assert.equal(isViewer(alice!), false);
  assert.equal(isViewer(viewer!), true);
  assert.equal(people.viewerCount('s1'), 1);
  assert.equal(people.lastTypist('s1')?.id, 'c1', 'a viewer is never the last typist');
  assert.equal(people.isTyping('s1', 'v1'), false);
  assert.equal(people.typedAt('s1', viewer!), undefined);
  assert.equal(people.colorOfName('viewer', 's1'), undefined);
});
