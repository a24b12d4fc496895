// Files into the prompt: an image or a file pasted or dropped onto a
// session's terminal, or picked with the phone key bar's Attach button,
// is sent to the server (POST /api/sessions/:id/attachments), which
// stores it in the session's tree; its absolute path is then pasted into
// the terminal through xterm's paste, so the program's bracketed paste
// applies (nothing runs, and Claude Code takes an image path as the
// image). How the path is written: models/attachments.ts.
//
// A paste holding text is the text's: an image that comes with text (an
// office program's copy of a table carries a picture of it too) is left
// to xterm, which pastes the text; only a paste of files alone uploads.

import type { Terminal } from '@xterm/xterm';
import { ApiError, attach } from '../shared/api';
import { nameFor, pasteText, sizeText } from '../models/attachments';

/** A file this large or larger says it is on its way; smaller ones arrive before a toast could be read. */
const SAY_SENDING_BYTES = 256 * 1024;

export interface AttachDeps {
  toast(message: string, kind?: 'info' | 'error'): void;
  /** Whether actions may be taken (connected, not shutting down). */
  canAct(): boolean;
}

/**
 * Uploads files for the session, one after another, and pastes each
 * stored path into term as it is stored; a refused file says why and the
 * rest still go.
 */
export async function attachFiles(sessionId: string, term: Terminal, files: File[], deps: AttachDeps): Promise<void> {
  if (!files.length) return;
  if (!deps.canAct()) {
    deps.toast('Not connected to the server: the file was not sent.', 'error');
    return;
  }
  for (const file of files) {
    const name = nameFor(file.name, file.type);
    if (file.size >= SAY_SENDING_BYTES) deps.toast(`Sending ${name} (${sizeText(file.size)})…`);
    try {
      const stored = await attach(sessionId, file, name);
      term.paste(pasteText(stored.absolutePath));
    } catch (err) {
      const why = err instanceof ApiError ? err.message : String(err);
      deps.toast(`${name} was not attached: ${why}`, 'error');
    }
  }
  term.focus();
}

/** The files of a paste or a drop, when it holds files and no text. */
function filesOf(data: DataTransfer | null): File[] {
  if (!data) return [];
  if (data.getData('text/plain')) return [];
  const files: File[] = [];
  for (const item of Array.from(data.items)) {
    if (item.kind !== 'file') continue;
    const f = item.getAsFile();
    if (f) files.push(f);
  }
  return files.length ? files : Array.from(data.files);
}

/**
 * Listens on host (a session's terminal element) for pastes and drops of
 * files: they are taken before xterm sees them (capture), so xterm does
 * not paste an empty text for them.
 */
export function listenForFiles(host: HTMLElement, sessionId: string, term: () => Terminal, deps: AttachDeps): void {
  host.addEventListener('paste', (ev) => {
    const files = filesOf(ev.clipboardData);
    if (!files.length) return;
    ev.preventDefault();
    ev.stopPropagation();
    void attachFiles(sessionId, term(), files, deps);
  }, true);
  host.addEventListener('dragover', (ev) => {
    if (!ev.dataTransfer?.types.includes('Files')) return;
    ev.preventDefault(); // without it, the browser opens the file instead
    ev.dataTransfer.dropEffect = 'copy';
    host.classList.add('drop-target');
  });
  host.addEventListener('dragleave', () => host.classList.remove('drop-target'));
  host.addEventListener('drop', (ev) => {
    host.classList.remove('drop-target');
    const files = Array.from(ev.dataTransfer?.files ?? []);
    if (!files.length) return;
    ev.preventDefault();
    ev.stopPropagation();
    void attachFiles(sessionId, term(), files, deps);
  });
}
