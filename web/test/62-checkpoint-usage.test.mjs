// Issue 43, point 2: each turn in the checkpoint timeline shows what it
// spent. A stand-in for Claude Code does what Claude does at each turn:
// it changes the tree, writes its answer's usage to its transcript,
// reports its cost through the status line command agentmux's settings
// name, and runs the Stop hook; each checkpoint then says its turn's
// tokens and cost, and a turn's figures arriving after its checkpoint
// (the cost Claude reports after the hook) reach the timeline too.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { uiTest, sel, tabById, tempDir, waitFor, waitForLine, initGitRepo } from './harness.mjs';
import { FAKE_CLAUDE_PRELUDE } from './claude-cli.mjs';

const FAKE_CLAUDE = `${FAKE_CLAUDE_PRELUDE}transcript=\${TMPDIR:-/tmp}/fake-claude-$$.jsonl
: > "$transcript"
n=0
echo ready
while IFS= read -r line; do
  n=$((n + 1))
  echo "turn $n" > "turn-$n.txt"
  printf '{"type":"assistant","message":{"id":"m%s","usage":{"input_tokens":%s,"cache_read_input_tokens":1000,"cache_creation_input_tokens":0,"output_tokens":%s}}}\\n' $n $((100 * n)) $((10 * n)) >> "$transcript"
  printf '{"hook_event_name":"Stop","transcript_path":"%s"}' "$transcript" | sh -c "$stop"
  # The cost comes after the Stop hook, as Claude reports it.
  printf '{"transcript_path":"%s","model":{"display_name":"Sonnet 4.5"},"cost":{"total_cost_usd":0.0%s}}' "$transcript" $((2 * n)) | sh -c "$statusline" > /dev/null
  echo "done $n"
done
`;

const binDir = await tempDir('fake-claude');
await fs.writeFile(path.join(binDir, 'claude'), FAKE_CLAUDE, { mode: 0o755 });
const env = { PATH: `${binDir}:${process.env.PATH}` };

uiTest("each checkpoint shows what its turn spent", { env, setupWorkspace: initGitRepo, timeout: 90_000 }, async ({ page, server, screenshot }) => {
  const s = await server.createSession({ name: 'spender', agent: 'claude' });
  await tabById(page, s.id).click();
  await waitForLine(page, s.id, 'ready');
  await page.locator(sel('layout-changes')).click();
  await page.locator(sel('ship-checkpoints')).click();
  await page.locator(sel('checkpoints')).waitFor({ state: 'visible' });

  const usageOf = (id) => page.locator(`${sel('checkpoint')}[data-id="${id}"] ${sel('checkpoint-usage')}`);
  for (const n of [1, 2]) {
    const typed = await server.api(`api/sessions/${s.id}/input`, { method: 'POST', body: JSON.stringify({ data: `turn ${n}\r` }) });
    assert.equal(typed.status, 204);
    await waitForLine(page, s.id, `done ${n}`, { timeout: 15_000 });
    // 1000 cached and 100·n fresh input tokens, 10·n out, $0.02 a turn.
    const want = `${((1000 + 110 * n) / 1000).toFixed(1)}k tok · $0.02`;
    await waitFor(async () => (await usageOf(n).count()) === 1 && (await usageOf(n).textContent()) === want, {
      timeout: 15_000, message: `checkpoint ${n} shows "${want}" (shows ${await usageOf(n).textContent().catch(() => 'nothing')})`,
    });
  }
  const title = await usageOf(2).getAttribute('title');
  assert.match(title, /The turn that ended here spent:\n1,200 input tokens \(cache reads and writes included\)\n20 output tokens\n\$0\.02/, title);
  // The turns add up to the session's figures.
  const { body } = await server.api('api/usage');
  const e = body.sessions.find((x) => x.id === s.id);
  assert.deepEqual(e.turns.map((t) => [t.turn, t.checkpoint, t.inputTokens, t.outputTokens]), [[1, 1, 1100, 10], [2, 2, 1200, 20]]);
  assert.equal(e.usage.inputTokens, 2300);
  await screenshot('checkpoint-usage');
});
