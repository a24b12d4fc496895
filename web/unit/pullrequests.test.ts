// PullRequests (src/models/pullrequests.ts): the link from the Session
// JSON, views from GET /pull-request and session.pullRequest, the turns a
// person hears of (never at load), and the bar's words for the checks.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  PullRequests, checksParts, checksTitle, forgeWords, hasReviewToAddress, reviewersTitle, reviewWords, turnsBetween,
  type ForgeInfo, type PullRequestView,
} from '../src/models/pullrequests';

const ID = 'session-1';
const URL12 = 'https://github.com/octo/demo/pull/12';

function view(more: Partial<PullRequestView> = {}): PullRequestView {
  return {
    number: 12, url: URL12, state: 'open', title: 'Add the widget', reviewDecision: '', reviews: [],
    checks: { state: 'pending', failing: [], pending: ['test'], passed: 2 }, unresolved: 0, checkedAt: '2025-01-01T10:00:00Z',
    ...more,
  };
}

const failing = { state: 'failing' as const, failing: ['lint'], pending: [], passed: 3 };
const forge: ForgeInfo = { host: 'github.com', api: 'https://api.github.com', source: 'GITHUB_TOKEN', sourceDetail: '', ready: true, missing: '' };

test('the Session JSON\'s link stands until a view comes, and asks for one once', () => {
  const prs = new PullRequests();
  const seen: (string | null)[] = [];
  prs.subscribe((id) => seen.push(id));
  assert.equal(prs.setLink(ID, undefined), false, 'no link, nothing to ask');
  assert.equal(prs.setLink(ID, { number: 12, url: URL12 }), true, 'a link without a view: ask');
  assert.deepEqual(prs.link(ID), { number: 12, url: URL12 });
  assert.equal(prs.view(ID), undefined);
  assert.equal(prs.setLink(ID, { number: 12, url: URL12 }), true, 'still no view');
  assert.deepEqual(seen, [ID], 'the same link again is no change');
  prs.apply(ID, view());
  assert.equal(prs.setLink(ID, { number: 12, url: URL12 }), false, 'a view came: nothing to ask');
});

test('the first view is where a session starts from: failing checks at load are no news', () => {
  const prs = new PullRequests();
  assert.deepEqual(prs.apply(ID, view({ checks: failing, reviewDecision: 'changes_requested' })), []);
  assert.equal(prs.view(ID)?.checks.state, 'failing');
  // GET /pull-request first, the same: no turns.
  const other = new PullRequests();
  assert.deepEqual(other.loaded(ID, { forge, pullRequest: view({ checks: failing }) }), []);
  assert.deepEqual(other.forge(ID), forge);
});

test('checks that turn to failing, and a review that turns to changes requested, are told once', () => {
  const prs = new PullRequests();
  prs.apply(ID, view());
  assert.deepEqual(prs.apply(ID, view({ checks: failing })), [{ kind: 'checks-failing', failing: ['lint'] }]);
  assert.deepEqual(prs.apply(ID, view({ checks: { ...failing, failing: ['lint', 'test'] } })), [], 'still failing: no news');
  assert.deepEqual(prs.apply(ID, view({ checks: failing, reviewDecision: 'changes_requested', unresolved: 2 })), [{ kind: 'changes-requested' }]);
  assert.deepEqual(prs.apply(ID, view({ checks: failing, reviewDecision: 'changes_requested', unresolved: 3 })), []);
  // Fixed, then failing again after a push: news again.
  prs.apply(ID, view({ checks: { state: 'passing', failing: [], pending: [], passed: 4 } }));
  assert.deepEqual(prs.apply(ID, view({ checks: failing })), [{ kind: 'checks-failing', failing: ['lint'] }]);
});

test('a view of another pull request starts afresh', () => {
  assert.deepEqual(turnsBetween(view(), view({ number: 13, checks: failing })), []);
});

test('what POST answered stands for a view until the server\'s, and makes no news of its checks', () => {
  const prs = new PullRequests();
  prs.created(ID, { number: 12, url: URL12, state: 'draft', created: true }, 'Add the widget');
  assert.equal(prs.view(ID)?.state, 'draft');
  assert.equal(prs.view(ID)?.checks.state, 'none');
  assert.deepEqual(prs.apply(ID, view({ checks: { state: 'pending', failing: [], pending: ['ci'], passed: 0 } })), []);
  assert.deepEqual(prs.apply(ID, view({ checks: failing })), [{ kind: 'checks-failing', failing: ['lint'] }]);
});

test('a view missing lists (an older or newer server) reads as empty ones', () => {
  const prs = new PullRequests();
  const partial = { ...view(), checks: { state: 'failing' } } as unknown as PullRequestView;
  prs.apply(ID, partial);
  assert.deepEqual(prs.view(ID)?.checks, { state: 'failing', failing: [], pending: [], passed: 0 });
});

test('a failed look keeps the view and says why; the next answer clears it', () => {
  const prs = new PullRequests();
  prs.apply(ID, view());
  prs.loadFailed(ID, 'GitHub is rate limited until 10:42');
  assert.equal(prs.error(ID), 'GitHub is rate limited until 10:42');
  assert.equal(prs.view(ID)?.number, 12);
  prs.loaded(ID, { forge, pullRequest: null });
  assert.equal(prs.error(ID), undefined);
});

test('the request in flight is one, and goes with its session', () => {
  const prs = new PullRequests();
  const seen: (string | null)[] = [];
  prs.subscribe((id) => seen.push(id));
  prs.setBusy(ID, 'fix-checks');
  assert.deepEqual(prs.busy, { sessionId: ID, action: 'fix-checks' });
  prs.forget(ID);
  assert.equal(prs.busy, null);
  assert.deepEqual(seen, [null]);
});

test('the checks in a few words, worst first', () => {
  assert.deepEqual(checksParts({ state: 'passing', failing: [], pending: [], passed: 3 }), [{ kind: 'passing', text: '\u2713 3 passing' }]);
  assert.deepEqual(checksParts({ state: 'failing', failing: ['lint'], pending: ['e2e'], passed: 3 }).map((p) => p.text),
    ['\u2717 lint failing', '\u2026 1 pending', '\u2713 3 passing']);
  assert.equal(checksParts({ state: 'failing', failing: ['lint', 'test', 'vet', 'e2e'], pending: [], passed: 0 })[0]!.text, '\u2717 lint, test +2 failing');
  assert.deepEqual(checksParts({ state: 'none', failing: [], pending: [], passed: 0 }), [{ kind: 'none', text: 'no checks' }]);
  assert.deepEqual(checksParts({ state: 'pending', failing: [], pending: [], passed: 0 }), [{ kind: 'pending', text: '\u2026 pending' }]);
  assert.equal(checksTitle({ state: 'failing', failing: ['lint', 'vet'], pending: ['e2e'], passed: 1 }), 'Failing: lint, vet\nPending: e2e\n1 passing');
});

test('the review in words, and when there is a review to address', () => {
  assert.equal(reviewWords({ reviewDecision: 'changes_requested', unresolved: 2 }), 'changes requested');
  assert.equal(reviewWords({ reviewDecision: 'approved', unresolved: 0 }), 'approved');
  assert.equal(reviewWords({ reviewDecision: '', unresolved: 1 }), '1 unresolved');
  assert.equal(reviewWords({ reviewDecision: '', unresolved: 0 }), '');
  assert.equal(hasReviewToAddress(view({ unresolved: 1 })), true);
  assert.equal(hasReviewToAddress(view({ reviewDecision: 'changes_requested' })), true);
  assert.equal(hasReviewToAddress(view({ reviewDecision: 'approved' })), false);
});

test('which token for which host, or what is missing', () => {
  assert.equal(forgeWords(forge), 'Using GITHUB_TOKEN for github.com.');
  assert.equal(forgeWords({ ...forge, source: 'file', sourceDetail: '/etc/agentmux/token' }), 'Using the token in /etc/agentmux/token for github.com.');
  assert.equal(forgeWords({ ...forge, source: 'gh', sourceDetail: 'gh auth token --hostname github.com' }), 'Using gh\'s token (gh auth token --hostname github.com) for github.com.');
  const missing = 'No GitHub token: set GITHUB_TOKEN or GH_TOKEN, pass --github-token-file, or run `gh auth login`';
  assert.equal(forgeWords({ ...forge, ready: false, source: '', missing }), missing);
});

test("the review's tooltip says who reviewed and how", () => {
  assert.equal(reviewersTitle(view({ reviews: [
    { author: 'octocat', state: 'approved', submittedAt: '2025-01-01T09:00:00Z' },
    { author: 'hubot', state: 'changes_requested', submittedAt: '2025-01-01T09:30:00Z' },
  ] })), 'octocat approved\nhubot asked for changes');
  assert.equal(reviewersTitle(view()), '');
});
