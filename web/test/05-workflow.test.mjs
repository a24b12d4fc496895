// Issue 5, test 5: the workflow panel follows bmm-workflow-status.yaml.
import assert from 'node:assert/strict';
import { uiTest, sel, waitFor } from './harness.mjs';

uiTest('workflow panel shows the steps of bmm-workflow-status.yaml', async ({ page, server, screenshot }) => {
  await server.writeFile(
    'docs/bmm-workflow-status.yaml',
    'workflow_status:\n  brainstorm: docs/brainstorm.md\n  prd: in-progress\n  architecture: required\n',
  );
  const steps = page.locator(sel('workflow-step'));
  await waitFor(async () => (await steps.count()) === 3, { message: 'three [data-testid=workflow-step] items' });
  await page.locator(sel('workflow')).waitFor({ state: 'visible' });

  const got = await steps.evaluateAll((els) =>
    els.map((e) => ({ name: e.getAttribute('data-name'), status: e.getAttribute('data-status'), current: e.hasAttribute('data-current') })),
  );
  assert.deepEqual(got, [
    { name: 'brainstorm', status: 'completed', current: false },
    { name: 'prd', status: 'in_progress', current: true },
    { name: 'architecture', status: 'pending', current: false },
  ]);
  const texts = await steps.evaluateAll((els) => els.map((e) => e.textContent));
  ['brainstorm', 'prd', 'architecture'].forEach((name, i) =>
    assert.match(texts[i], new RegExp(name, 'i'), `step ${i} shows its name "${name}"`),
  );
  const progress = page.locator(sel('workflow-progress'));
  const now = Number(await progress.getAttribute('aria-valuenow'));
  assert.ok(Math.abs(now - 100 / 3) <= 1, `workflow-progress aria-valuenow ${now} ≈ 33`);

  // It follows changes: prd done, architecture in progress.
  await server.writeFile(
    'docs/bmm-workflow-status.yaml',
    'workflow_status:\n  brainstorm: docs/brainstorm.md\n  prd: docs/prd.md\n  architecture: in-progress\n',
  );
  await waitFor(
    async () => (await page.locator(`${sel('workflow-step')}[data-name="architecture"]`).getAttribute('data-status')) === 'in_progress',
    { message: 'architecture in_progress after the file changed' },
  );
  const later = await steps.evaluateAll((els) => els.map((e) => [e.getAttribute('data-status'), e.hasAttribute('data-current')]));
  assert.deepEqual(later, [['completed', false], ['completed', false], ['in_progress', true]]);
  await waitFor(async () => Math.abs(Number(await progress.getAttribute('aria-valuenow')) - 200 / 3) <= 1, {
    message: 'workflow-progress ≈ 67',
  });

  // Back to the state of the screenshot the issue asks for.
  await server.writeFile(
    'docs/bmm-workflow-status.yaml',
    'workflow_status:\n  brainstorm: docs/brainstorm.md\n  prd: in-progress\n  architecture: required\n',
  );
  await waitFor(
    async () => (await page.locator(`${sel('workflow-step')}[data-name="prd"]`).getAttribute('data-status')) === 'in_progress',
    { message: 'prd in_progress again' },
  );
  await screenshot('workflow');
});
