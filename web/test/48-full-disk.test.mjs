// A data directory on a full file system (issue 40, point 11). The server
// keeps serving, and saving that fails is a state people see: a banner
// saying what failed, since when, where and what to do, the same in
// /api/health (degraded, with the reason), a page that loads meanwhile is
// told at once; once space returns and a save of everything succeeds, the
// banner goes and health is ok.
//
// The full disk is real: the server runs in a mount namespace of its own
// (unshare) with a 1 MiB tmpfs on its data directory, which a session
// fills with `head -c` until the kernel says ENOSPC, and another session
// frees with rm. Only processes of the namespace (the server and its
// sessions) see that tmpfs, and it goes with them, so nothing is left
// mounted whatever happens to the test. Mounting needs root, or a user
// namespace (unshare --user --map-root-user); where the kernel allows
// neither the test is skipped and says why.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { uiTest, sel, waitFor, reloadApp } from './harness.mjs';

const MOUNT = 'mount -t tmpfs -o size="$1" tmpfs "$0" && shift && exec "$@"';

/** The unshare flags that let this user mount a tmpfs in a namespace of its own, or why none do. */
function mountFlags() {
  const refusals = [];
  for (const flags of [['--mount'], ['--user', '--map-root-user', '--mount']]) {
    const probe = fs.mkdtempSync(path.join(os.tmpdir(), 'agentmux-uitest-probe-'));
    try {
      execFileSync('unshare', [...flags, 'sh', '-c', MOUNT, probe, '64k', 'true'], { stdio: 'pipe' });
      return { flags };
    } catch (err) {
      refusals.push(`unshare ${flags.join(' ')}: ${String(err.stderr || err.message).trim()}`);
    } finally {
      fs.rmSync(probe, { recursive: true, force: true });
    }
  }
  return { skip: `cannot mount a tmpfs here, as root or in a user namespace: ${refusals.join('; ')}` };
}

const { flags, skip } = mountFlags();

uiTest(
  'a full disk shows a banner and degrades /api/health until space returns',
  {
    skip,
    viewport: { width: 1440, height: 900 },
    flags: ['--save-interval', '200ms', '--scrollback', '64KiB'],
    wrap: (bin, args, server) => ['unshare', [...flags, 'sh', '-c', MOUNT, server.dataDir, '1m', bin, ...args]],
  },
  async ({ page, server, screenshot }) => {
    const database = path.join(server.dataDir, 'agentmux.db');
    const health = async () => (await server.api('api/health')).body;
    assert.equal((await health()).status, 'ok', 'healthy before the disk fills');
    const banner = page.locator(sel('banner-save'));
    assert.ok(!(await banner.isVisible()), 'no banner while saving works');

    // One session fills the file system, as an agent's build could;
    // another prints, so there is always something new to save.
    const fill = path.join(server.dataDir, 'fill');
    await server.createSession({ name: 'fill', command: ['sh', '-c', 'head -c 8M /dev/zero > "$0"; echo filled; exec sleep 60', fill] });
    await server.createSession({ name: 'print', command: ['sh', '-c', 'while :; do seq 1 2000; sleep 0.1; done'] });

    await banner.waitFor({ state: 'visible', timeout: 15_000 });
    const text = await banner.innerText();
    assert.match(text, /Sessions are not being saved: the disk is full\./, 'what failed');
    assert.match(await page.locator(sel('banner-save-since')).innerText(), /^Since \d/, 'since when');
    const where = await page.locator(sel('banner-save-where')).innerText();
    assert.ok(where.includes(database), `where: ${where}`);
    assert.match(where, /no space left on device/, 'the database\'s own error');
    assert.match(await page.locator(sel('banner-save-advice')).innerText(), /Free space on the file system that holds .*saving resumes by itself.*restart loses/, 'what to do');

    const degraded = await health();
    assert.equal(degraded.status, 'degraded', `health while the disk is full: ${JSON.stringify(degraded)}`);
    for (const want of ['the disk is full', database, 'no space left on device', 'Free space', 'Since ']) {
      assert.ok(degraded.reason.includes(want), `health's reason says ${want}: ${degraded.reason}`);
    }
    await screenshot('48-full-disk-1440');
    await page.setViewportSize({ width: 390, height: 844 });
    await waitFor(() => page.evaluate(() => document.documentElement.clientWidth === 390), { message: 'the phone width' });
    assert.ok(await banner.isVisible(), 'the banner stays on a phone');
    const box = await banner.boundingBox();
    assert.ok(box && box.x >= 0 && box.x + box.width <= 390, `the banner fits the phone's width: ${JSON.stringify(box)}`);
    await screenshot('48-full-disk-390');
    await page.setViewportSize({ width: 1440, height: 900 });

    // A page that loads while it fails is told at once.
    await reloadApp(page);
    await banner.waitFor({ state: 'visible' });
    assert.match(await banner.innerText(), /not being saved/, 'the banner after a reload');

    // Space comes back.
    await server.createSession({ name: 'free', command: ['rm', '-f', fill] });
    await banner.waitFor({ state: 'hidden', timeout: 15_000 });
    await waitFor(async () => (await health()).status === 'ok', { message: '/api/health ok again' });
    assert.equal((await health()).reason, undefined, 'no reason once healthy');
    assert.equal(server.log.match(/sessions are not being saved/g)?.length, 1, 'one log line when saving started failing');
    assert.equal(server.log.match(/sessions are saved again/g)?.length, 1, 'one when it works again');
  },
);
