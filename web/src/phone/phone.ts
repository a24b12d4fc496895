// Small screens (phone.css has the breakpoints): the session switcher in
// the top bar in place of the tab strip, scroll buttons for a tab strip
// that overflows on a desktop, a clear way out of every panel that takes
// the whole screen on a phone (the side panel, a document, the Changes
// view; the queue has its own), and the list of who is in the session.

import { byId, h } from '../shared/dom';
import { LAYOUT_MODES, type LayoutController } from '../views/layout';
import type { Participants } from '../models/participants';
import { addPeopleSheet } from './peoplesheet';
import type { SessionStore } from '../models/store';
import { closeIcon, SessionSwitcher } from './switcher';
import type { TabBar } from '../views/tabs';
import { addTabScrollButtons } from '../views/tabscroll';

export interface SmallScreenDeps {
  store: SessionStore;
  tabs: TabBar;
  layout: LayoutController;
  canAct(): boolean;
  /** Shows a session the user picked from the switcher. */
  select(id: string): void;
  people: Participants;
  meId(): string | null;
  /** Closes the prompt queue (a sheet over the view on a phone). */
  closeQueue(): void;
}

/** Where the panels are sheets over the view (phone.css). */
const NARROW = window.matchMedia('(max-width: 800px)');

export function setUpSmallScreens(deps: SmallScreenDeps): SessionSwitcher {
  const strip = byId('tabs');
  const switcher = new SessionSwitcher({
    store: deps.store,
    canAct: deps.canAct,
    onSelect: deps.select,
    onClose: (id) => deps.tabs.askClose(id),
    onNew: () => deps.tabs.openNewDialog(),
  });
  strip.before(switcher.button);
  addTabScrollButtons(strip);
  addPeopleSheet(deps.people, () => deps.store.activeId, deps.meId);

  const app = byId('app');
  const sidebar = byId('sidebar');
  const closeSidebar = sheetClose('sidebar-close', 'Close the side panel', () => {
    app.classList.remove('sidebar-open');
    byId('sidebar-toggle').focus();
  });
  sidebar.prepend(h('div', { class: 'sheet-head phone-only' }, h('h2', { class: 'sheet-title', text: 'Workspace' }), h('span', { class: 'grow' }), closeSidebar));
  document.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape' && app.classList.contains('sidebar-open')) app.classList.remove('sidebar-open');
  });

  // The queue and the side panel are sheets over the view on a phone: a
  // view button shows the view it names, so they make way for it (they
  // stayed over it, and came back over the terminal with Terminal).
  for (const mode of LAYOUT_MODES) {
    byId(`layout-${mode}`).addEventListener('click', () => {
      if (!NARROW.matches) return;
      app.classList.remove('sidebar-open');
      deps.closeQueue();
    });
  }

  // A document, the Changes or the Preview view fills a phone's screen: back to the terminal.
  for (const [pane, testid, what] of [['artifact', 'artifact-close', 'the document'], ['changes', 'changes-close', 'the Changes view'], ['preview', 'preview-close', 'the preview']] as const) {
    const btn = sheetClose(testid, `Close ${what}`, () => deps.layout.set('terminal'));
    byId(pane).querySelector('.pane-header')?.append(btn);
  }
  return switcher;
}

/** A close button shown on small screens only (phone.css), with its word beside the cross. */
function sheetClose(testid: string, label: string, onClick: () => void): HTMLButtonElement {
  const btn = h('button', { type: 'button', class: 'btn btn-small sheet-close phone-only', 'data-testid': testid, 'aria-label': label, title: label }, closeIcon(), h('span', { text: 'Close' }));
  btn.addEventListener('click', onClick);
  return btn;
}
