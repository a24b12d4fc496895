// Stop sends an interrupt that ends the running command (and the rest of its
// command list); a large paste reaches the agent's PTY whole.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import {
  uiTest,
  sel,
  createSession,
  waitFor,
  waitForPrompt,
  waitForLine,
  typeCommand,
  terminalLines,
  terminalPane,
  terminalHasFocus,
} from './harness.mjs';

/** The parent pid of a process, or null when it is gone. */
async function ppidOf(pid) {
  const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
  if (!stat) return null;
  // pid (comm) state ppid ...; comm may hold spaces and parentheses.
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(rest[1]);
}

/** Pids of processes running exactly `argv` that descend from `ancestor`. */
async function descendantsRunning(ancestor, argv) {
  const want = argv.join('\0');
  const found = [];
  for (const name of await fs.readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const cmdline = await fs.readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.replace(/\0$/, '') !== want) continue;
    for (let p = Number(name), hops = 0; p && p > 1 && hops < 20; hops++) {
      p = await ppidOf(p);
      if (p === ancestor) {
        found.push(Number(name));
        break;
      }
    }
  }
  return found;
}

uiTest('stop interrupts a running command and the prompt returns', { timeout: 30_000 }, async ({ page, server, screenshot }) => {
  const id = await createSession(page, 'stopper');
  await waitForPrompt(page, id);
  const stop = page.locator(sel('stop'));
  await stop.waitFor({ state: 'visible' });

  await typeCommand(page, 'sleep 30; echo after-sleep');
  const isCmd = (l) => /^\$ sleep 30; echo after-sleep$/.test(l);
  await waitForLine(page, id, isCmd, { message: 'the echoed "sleep 30; echo after-sleep" command line' });
  // Interrupt only once sleep really runs (not while bash is still between
  // reading the line and forking), so the test exercises the real case.
  const sleeps = await waitFor(async () => {
    const pids = await descendantsRunning(server.proc.pid, ['sleep', '30']);
    return pids.length ? pids : null;
  }, { timeout: 5000, message: 'a "sleep 30" process under the server' });

  await waitFor(async () => !(await stop.isDisabled()), { timeout: 5000, message: '[data-testid=stop] enabled' });
  const clickedAt = Date.now();
  await stop.click();

  // A new prompt after the command line, within a few seconds.
  await waitFor(
    async () => {
      const lines = await terminalLines(page, id);
      const at = lines.findLastIndex(isCmd);
      return at >= 0 && lines.slice(at + 1).some((l) => /^\$( |$)/.test(l));
    },
    { timeout: 5000, message: 'a "$ " prompt after the interrupted sleep' },
  );
  const elapsed = Date.now() - clickedAt;
  assert.ok(elapsed < 5000, `prompt back ${elapsed} ms after stop`);
  await waitFor(async () => (await Promise.all(sleeps.map(ppidOf))).every((p) => p === null), {
    timeout: 3000,
    message: `the sleep process(es) ${sleeps} gone after stop`,
  });

  // The shell still works, and everything it printed up to now is in the
  // buffer: "after-sleep" was never printed (the interrupt ended the list).
  await typeCommand(page, 'echo alive-$((20+22))');
  await waitForLine(page, id, 'alive-42', { timeout: 5000 });
  const lines = await terminalLines(page, id);
  const printed = lines.filter((l) => l.trim() === 'after-sleep');
  assert.deepEqual(printed, [], `"after-sleep" must not be printed; buffer:\n${lines.filter(Boolean).join('\n')}`);
  assert.equal(
    await page.locator(`${sel('tab')}[data-session-id="${id}"]`).getAttribute('data-status'),
    'active',
    'the session is still running after the interrupt',
  );
  await screenshot('stop');
});

uiTest('a ~200 KB paste arrives whole in the PTY', { timeout: 30_000 }, async ({ t, page, server, screenshot }) => {
  const id = await createSession(page, 'paster');
  await waitForPrompt(page, id);

  // 4000 lines of 50 ASCII characters (51 bytes with the newline): short
  // lines, since a canonical-mode PTY holds at most 4095 characters a line.
  const lines = [];
  for (let i = 0; i < 4000; i++) {
    const head = `line-${String(i).padStart(4, '0')} `;
    lines.push(head + 'abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMN'.slice(0, 50 - head.length));
  }
  const text = `${lines.join('\n')}\n`;
  assert.equal(text.length, 4000 * 51);

  const target = path.join(server.home, 'paste.txt');
  await typeCommand(page, 'stty -echo; cat > ~/paste.txt');
  // cat has the terminal once the file exists (the shell's redirection).
  await waitFor(() => fs.stat(target).then(() => true, () => false), { timeout: 5000, message: `${target} created by cat` });

  // Bracketed paste would wrap the text in ESC[200~ ... ESC[201~, which cat
  // would write into the file. Readline turns it on at the prompt and off
  // (ESC[?2004l) when it accepts a line, before the command runs; that
  // output may reach xterm a little after the file exists, so wait for it.
  const bracketedAtPrompt = await page.evaluate((sid) => window.__agentmux.terminals.get(sid).modes.bracketedPasteMode, id);
  t.diagnostic(`bracketedPasteMode when cat has started (as seen so far): ${bracketedAtPrompt}`);
  await waitFor(
    () => page.evaluate((sid) => window.__agentmux.terminals.get(sid).modes.bracketedPasteMode === false, id),
    { timeout: 5000, message: 'bracketed paste mode off while cat reads the terminal' },
  );

  await terminalPane(page).click();
  assert.ok(await terminalHasFocus(page), 'the terminal has focus for the paste');
  await page.evaluate(([sid, s]) => window.__agentmux.terminals.get(sid).paste(s), [id, text]);

  // Wait until cat has written the whole paste before ending its input, so
  // Ctrl+D does not land in the middle of a line still in transit.
  await waitFor(async () => (await fs.stat(target)).size >= text.length, {
    timeout: 10_000,
    message: `${target} reaching ${text.length} bytes`,
  }).catch(async (err) => {
    err.message += ` (size now ${(await fs.stat(target)).size})`;
    throw err;
  });
  await page.keyboard.press('Control+d');
  await typeCommand(page, 'stty echo; echo "wc=$(wc -c < ~/paste.txt)"');
  const wc = await waitForLine(page, id, /^wc=\d+$/, { timeout: 10_000 });
  assert.equal(Number(wc.slice(3)), text.length, `wc -c of the pasted file (${wc})`);

  const got = await fs.readFile(target, 'utf8');
  if (got !== text) {
    let i = 0;
    while (i < got.length && got[i] === text[i]) i++;
    assert.fail(`paste.txt differs from the pasted text at byte ${i}: got ${JSON.stringify(got.slice(i, i + 60))}, want ${JSON.stringify(text.slice(i, i + 60))}`);
  }
  await screenshot('paste');
});
