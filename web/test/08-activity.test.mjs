// Issue 5, test 8: the activity feed lists workspace changes; a click opens
// the file in the artifact pane.
import assert from 'node:assert/strict';
import { uiTest, sel, waitFor, waitForLine } from './harness.mjs';

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

// Issue 40, point 10: tools that edit in place leave no trace in the
// feed. sed -i and perl -i, run in a session as an agent would run them,
// write a temporary beside the file (sedG7xFA9, XXVJAFmE) and rename it
// over the file: the feed shows the file changed, and no temporary.
uiTest('sed -i and perl -i in a session show as a change of the file, without their temporaries', async ({ page, server }) => {
  // Files big enough that the temporaries live for a while, as a
  // generated file's or a log's do.
  await server.writeFile('config.ini', 'debug=false\n'.repeat(400_000));
  await server.writeFile('notes.txt', 'draft\n'.repeat(400_000));
  const item = (rel) => page.locator(`${sel('activity-item')}[data-path="${rel}"]`);
  await item('notes.txt').first().waitFor({ state: 'visible' });
  const s = await server.createSession({
    name: 'editor',
    command: ['sh', '-c', "sed -i 's/false/true/' config.ini && perl -pi -e 's/draft/final/' notes.txt && echo edited-in-place && exec sleep 60"],
  });
  await waitForLine(page, s.id, 'edited-in-place');
  await page.locator(`${sel('activity-item')}[data-path="config.ini"][data-event="change"]`).first().waitFor({ state: 'visible' });
  await page.locator(`${sel('activity-item')}[data-path="notes.txt"][data-event="change"]`).first().waitFor({ state: 'visible' });
  // Both renames are in: anything of theirs would have been reported by now.
  const paths = await page.locator(sel('activity-item')).evaluateAll((els) => els.map((e) => e.getAttribute('data-path')));
  assert.deepEqual([...new Set(paths)].sort(), ['config.ini', 'notes.txt'], `only the edited files in the feed: ${JSON.stringify(paths)}`);
});
