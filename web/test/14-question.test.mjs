// Agent awareness, the fallback: output whose last line ends with '?',
// then quiet for --question-quiet, makes a session wait; the same output
// without the question mark does not.
import assert from 'node:assert/strict';
import { uiTest, sel, tabById, waitFor, waitForLine, typeCommand } from './harness.mjs';

const script = (prompt) => ['sh', '-c', `printf "${prompt} "; read x; echo "answer=$x"; sleep 30`];

uiTest('a question left on screen makes the session wait', { flags: ['--question-quiet', '300ms'] }, async ({ page, server }) => {
  // The statement starts first, so by the time the question has been
  // quiet long enough, so has the statement.
  const statement = await server.createSession({ name: 'statement', command: script('Proceed.') });
  await tabById(page, statement.id).waitFor({ state: 'visible' });
  await waitForLine(page, statement.id, /Proceed\./);
  const question = await server.createSession({ name: 'question', command: script('Proceed?') });
  const tab = tabById(page, question.id);
  await tab.waitFor({ state: 'visible' });

  await waitFor(async () => (await tab.getAttribute('data-status')) === 'waiting', { message: 'the question\'s tab data-status waiting' });
  await waitFor(async () => (await tab.locator(sel('tab-dot')).count()) === 1, { message: 'the question\'s tab-dot' });
  assert.match((await tab.getAttribute('title')) ?? '', /Proceed\?/, 'the tab\'s tooltip gives the question');
  assert.equal(await tabById(page, statement.id).getAttribute('data-status'), 'active', 'the statement is not a question');
  assert.equal(await page.title(), '(1) agentmux');

  await tab.click();
  await typeCommand(page, 'go');
  await waitForLine(page, question.id, 'answer=go');
  await waitFor(async () => (await tab.getAttribute('data-status')) === 'active', { message: 'data-status active after the answer' });
  await waitFor(async () => (await page.title()) === 'agentmux', { message: 'document.title back to "agentmux"' });
});
