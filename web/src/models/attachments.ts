// Files handed to an agent (pasted, dropped, attached on a phone): how
// their paths are typed at the prompt once the server stored them
// (POST /api/sessions/:id/attachments, protocol.md "Attachments").
//
// Claude Code takes a pasted image as an image only when the paste is its
// absolute path (relative ones it leaves as text), unquoting '...' or
// "..." around it and undoing backslash escapes; it splits one paste into
// paths only at line breaks and at a space right before a "/", so two
// quoted paths in one paste read as one path that does not exist. A shell
// takes the same quoted word. So each path is typed absolute,
// single-quoted when it holds anything a shell would read,
// backslash-escaped when it holds a quote itself, with a space after,
// and each file in a paste of its own.

/** What the file picker offers: what the server takes (images, PDF, text). */
export const ATTACH_ACCEPT = 'image/*,application/pdf,text/*';

/** Characters a path may hold and still be typed bare. */
const BARE = /^[A-Za-z0-9_\-.,/@+=:%]+$/;

/** path as one shell word, which Claude Code reads back as the path. */
export function promptPath(path: string): string {
  if (BARE.test(path)) return path;
  if (!path.includes("'")) return `'${path}'`;
  return path.replace(/[^A-Za-z0-9_\-.,/@+=:%]/g, (c) => `\\${c}`);
}

/** The text pasted at the prompt for one stored file: its word, a space after. */
export function pasteText(path: string): string {
  return `${promptPath(path)} `;
}

/** A name for a pasted file the clipboard gave none ("image.png" for a screenshot). */
export function nameFor(name: string, type: string): string {
  if (name) return name;
  const ext = /^image\/(png|jpeg|gif|webp)$/.exec(type)?.[1];
  if (ext) return `pasted.${ext === 'jpeg' ? 'jpg' : ext}`;
  if (type === 'application/pdf') return 'pasted.pdf';
  return 'pasted.txt';
}

/** A size in words: 1.2 MiB, 34 KiB, 12 B. */
export function sizeText(bytes: number): string {
  if (bytes >= 1 << 20) return `${(bytes / (1 << 20)).toFixed(1)} MiB`;
  if (bytes >= 1 << 10) return `${Math.round(bytes / (1 << 10))} KiB`;
  return `${bytes} B`;
}
