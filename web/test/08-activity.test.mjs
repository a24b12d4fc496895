// Issue 5, test 8: the activity feed lists workspace changes; a click opens
// the file in the artifact pane.
import assert from 'node:assert/strict';
import { uiTest, sel, waitFor } from './harness.mjs';

uiTest('activity feed shows a new file and opens it on click', async ({ page, server }) => {
  await server.writeFile('src/a.txt', 'alpha-content-1\n');
  const item = page.locator(`${sel('activity-item')}[data-path="src/a.txt"][data-event="add"]`);
  await item.first().waitFor({ state: 'visible' });
  await page.locator(sel('activity')).waitFor({ state: 'visible' });
  assert.match(await item.first().innerText(), /a\.txt/, 'the item shows the file name');

  // Newest first: a later file goes above.
  await server.writeFile('src/b.txt', 'bravo\n');
  const newest = page.locator(`${sel('activity-item')}[data-path="src/b.txt"]`);
  await newest.first().waitFor({ state: 'visible' });
  // The watcher may follow an add with a change for the same write (at most
  // two events per burst), so compare the two "add" items.
  const order = await page
    .locator(sel('activity-item'))
    .evaluateAll((els) => els.map((e) => `${e.getAttribute('data-event')}:${e.getAttribute('data-path')}`));
  assert.ok(
    order.indexOf('add:src/b.txt') >= 0 && order.indexOf('add:src/b.txt') < order.indexOf('add:src/a.txt'),
    `src/b.txt's add listed above src/a.txt's (newest first): ${JSON.stringify(order)}`,
  );
  assert.ok(order.every((p) => !/:\//.test(p)), `data-path is workspace-relative: ${JSON.stringify(order)}`);

  await item.first().click();
  await page.locator(sel('artifact')).waitFor({ state: 'visible' });
  await waitFor(async () => (await page.locator(sel('artifact-path')).innerText()).trim() === 'src/a.txt', {
    message: 'artifact-path src/a.txt',
  });
  await waitFor(async () => (await page.locator(sel('artifact-content')).innerText()).includes('alpha-content-1'), {
    message: 'artifact-content shows the file',
  });
  assert.notEqual(await page.locator('#app').getAttribute('data-layout'), 'terminal', 'the artifact pane is shown');
});
