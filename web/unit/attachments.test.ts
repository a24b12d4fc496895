// How a stored attachment's path is typed at the prompt
// (src/models/attachments.ts): as one word a shell and Claude Code both
// read back as the path.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { nameFor, pasteText, promptPath, sizeText } from '../src/models/attachments';

test('a plain path goes bare; one with a space or a shell character single-quoted', () => {
  assert.equal(promptPath('/ws/.agentmux/attachments/s1/shot.png'), '/ws/.agentmux/attachments/s1/shot.png');
  assert.equal(promptPath('/ws/.agentmux/attachments/s1/Screen shot.png'), "'/ws/.agentmux/attachments/s1/Screen shot.png'");
  assert.equal(promptPath('/my $HOME/x.png'), "'/my $HOME/x.png'");
  assert.equal(promptPath('/ws/日本.png'), "'/ws/日本.png'");
});

test("a path with a quote is backslash-escaped, as a shell and Claude Code's unescaping read it", () => {
  assert.equal(promptPath("/ann's ws/x.png"), "/ann\\'s\\ ws/x.png");
});

test('a paste is the word and a space, so the next file or word stands apart', () => {
  assert.equal(pasteText('/b c.pdf'), "'/b c.pdf' ");
});

test('a pasted file without a name is named for its type', () => {
  assert.equal(nameFor('', 'image/png'), 'pasted.png');
  assert.equal(nameFor('', 'image/jpeg'), 'pasted.jpg');
  assert.equal(nameFor('', 'application/pdf'), 'pasted.pdf');
  assert.equal(nameFor('shot.png', 'image/png'), 'shot.png');
  assert.equal(sizeText(1536 * 1024), '1.5 MiB');
});
