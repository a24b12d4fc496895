// Markdown to safe DOM. Documents come from agents, so they are untrusted:
// marked renders them, DOMPurify keeps no script, no event handler, no
// style, no frame, object or form; links open in a new tab without access
// to this page; relative images load from the workspace.

import createDOMPurify from 'dompurify';
import { Marked } from 'marked';
import { fileURL } from './api';
import { isExternal, resolveWorkspacePath } from './links';

const marked = new Marked({
  gfm: true,
  renderer: {
    // GFM task lists: a mark instead of an <input>, which is forbidden below.
    checkbox({ checked }) {
      return `<span class="task-box${checked ? ' checked' : ''}" aria-hidden="true"></span>`;
    },
  },
});

const purify = createDOMPurify(window);

const FORBID_TAGS = [
  'style', 'iframe', 'frame', 'frameset', 'object', 'embed', 'applet', 'form', 'input', 'button',
  'textarea', 'select', 'option', 'base', 'link', 'meta', 'template', 'portal',
];
const FORBID_ATTR = ['style', 'srcset', 'action', 'formaction', 'ping', 'background'];

/** The document being sanitized, for the hook that resolves relative images. */
let currentDoc = '';

purify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A' && node.hasAttribute('href')) {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer');
  }
  if (node.tagName === 'IMG') {
    const src = node.getAttribute('src') ?? '';
    if (src && !isExternal(src) && !src.startsWith('data:')) {
      node.setAttribute('src', fileURL(resolveWorkspacePath(currentDoc, src)));
    }
    node.setAttribute('loading', 'lazy');
    node.setAttribute('referrerpolicy', 'no-referrer');
  }
});

/** Renders markdown from the workspace file at docPath into sanitized DOM. */
export function renderMarkdown(src: string, docPath: string): DocumentFragment {
  const html = marked.parse(src, { async: false });
  currentDoc = docPath;
  try {
    return purify.sanitize(html, {
      USE_PROFILES: { html: true },
      FORBID_TAGS,
      FORBID_ATTR,
      ALLOW_DATA_ATTR: false,
      RETURN_DOM_FRAGMENT: true,
    });
  } finally {
    currentDoc = '';
  }
}
