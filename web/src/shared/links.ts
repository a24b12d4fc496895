// Links inside workspace documents: which leave the workspace, and where
// a relative one points. Apart from markdown.ts, which the page loads only
// when it first renders a document.

/** True for a URL with a scheme (https:, mailto:...) or a protocol-relative one. */
export function isExternal(href: string): boolean {
  return /^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('//');
}

/** Resolves href against the workspace-relative document path `from`. */
export function resolveWorkspacePath(from: string, href: string): string {
  const clean = href.split('#')[0]!.split('?')[0]!;
  const url = new URL(clean, `http://workspace/${from}`);
  return decodeURIComponent(url.pathname.replace(/^\/+/, ''));
}
