// Who is in the session, as a sheet on small screens. The header's
// avatars tell who is there by their tooltips, which a finger cannot
// bring up: on a phone a tap on them (or Enter) lists everyone with what
// they do, the way the tooltips say it.

import { avatar, viewerAvatar } from '../shared/avatars';
import { showAgo } from '../shared/ages';
import { byId, h } from '../shared/dom';
import { VIEWER_LABEL, isViewer, type Participants } from '../models/participants';
import { closeIcon } from './switcher';

const NARROW = window.matchMedia('(max-width: 800px)');

export function addPeopleSheet(people: Participants, activeId: () => string | null, meId: () => string | null): void {
  const box = byId('term-people');
  const list = h('ul', { class: 'people-list', 'data-testid': 'people-list' });
  const close = h('button', { type: 'button', class: 'sheet-close', 'data-testid': 'people-close', 'aria-label': 'Close the list of people' }, closeIcon());
  const sheet = h(
    'dialog',
    { class: 'sheet people-sheet', 'data-testid': 'people-sheet', 'aria-labelledby': 'people-title' },
    h('div', { class: 'sheet-head' }, h('h2', { id: 'people-title', class: 'sheet-title', text: 'In this session' }), h('span', { class: 'grow' }), close),
    list,
  );
  document.body.append(sheet);
  close.addEventListener('click', () => sheet.close());
  sheet.addEventListener('click', (ev) => {
    if (ev.target === sheet) sheet.close();
  });

  const render = () => {
    const id = activeId();
    const me = meId();
    const all = id ? [...people.get(id)].sort((a, b) => Number(isViewer(a)) - Number(isViewer(b)) || Number(b.viewing) - Number(a.viewing)) : [];
    const last = id ? people.lastTypist(id) : undefined;
    list.replaceChildren(...all.map((p) => {
      if (isViewer(p)) {
        return h(
          'li',
          { class: 'people-row', 'data-testid': 'people-row', 'data-participant-id': p.id, 'data-viewer': 'true' },
          viewerAvatar({ name: VIEWER_LABEL, color: p.color }, { size: 'lg' }),
          h('span', { class: 'people-who' },
            h('span', { class: 'people-name', text: VIEWER_LABEL }),
            h('span', { class: 'people-what', text: 'watching through a link, cannot type' })),
        );
      }
      const typing = !!id && people.isTyping(id, p.id);
      const at = id ? people.typedAt(id, p) : undefined;
      const what = [p.viewing ? 'watching this session' : 'has it open, looking at another session'];
      if (typing) what.push('typing now');
      else if (at !== undefined) what.push(last?.id === p.id ? 'typed last, ' : 'typed ');
      const doing = h('span', { class: 'people-what', text: what.join(' · ') });
      // When they typed is said last, and kept current (shared/ages.ts).
      if (!typing && at !== undefined) showAgo(doing, at, { prefix: what.join(' · ') });
      return h(
        'li',
        { class: `people-row${p.viewing ? '' : ' away'}`, 'data-testid': 'people-row', 'data-participant-id': p.id },
        avatar(p, { size: 'lg' }),
        h('span', { class: 'people-who' },
          h('span', { class: 'people-name', text: p.id === me ? `${p.name} (you)` : p.name }),
          doing),
      );
    }));
  };
  people.subscribe((id) => {
    if (sheet.open && id === activeId()) render();
  });

  const open = () => {
    if (!NARROW.matches || box.hidden) return;
    render();
    sheet.showModal();
    close.focus();
  };
  // The avatars are a group of pictures on a desktop; on a phone they are the way to the list.
  const sync = () => {
    if (NARROW.matches) {
      box.tabIndex = 0;
      box.setAttribute('aria-haspopup', 'dialog');
    } else {
      box.removeAttribute('tabindex');
      box.removeAttribute('aria-haspopup');
      if (sheet.open) sheet.close();
    }
  };
  NARROW.addEventListener('change', sync);
  sync();
  box.addEventListener('click', open);
  box.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' || ev.key === ' ') {
      ev.preventDefault();
      open();
    }
  });
}
