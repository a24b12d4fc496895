// Renders public/icon.svg into the PNG icons the web app manifest names
// (public/icon-192.png, public/icon-512.png) with Debian's Chromium. Run it
// after changing the icon: node render-icons.mjs (needs test/'s packages).
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from './test/node_modules/playwright-core/index.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const svg = await readFile(join(here, 'public', 'icon.svg'), 'utf8');
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ['--no-sandbox'] });
try {
  for (const size of [192, 512]) {
    const page = await browser.newPage({ viewport: { width: size, height: size } });
    await page.setContent(`<style>html,body{margin:0}svg{display:block;width:${size}px;height:${size}px}</style>${svg}`);
    await page.screenshot({ path: join(here, 'public', `icon-${size}.png`), omitBackground: true });
    await page.close();
  }
} finally {
  await browser.close();
}
