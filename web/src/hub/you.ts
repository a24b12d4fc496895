// Who answers from the hub: the name kept in this browser as agentmux's
// page keeps it (views/identity.ts, the same key of localStorage), which
// each workspace records with the answers given from here. The "you"
// button in the top bar opens a small editor, as agentmux's does.

import { avatar } from '../shared/avatars';
import { byId } from '../shared/dom';
import { wirePopover } from '../shared/popover';
import { COLORS, nameTooLong, saveName, savedIdentity } from '../views/identity';

/** The hub's bound on a name: it leaves room for the " (hub)" the workspaces add. */
const MAX_BY_BYTES = 80;

export class YouButton {
  private readonly button = byId<HTMLButtonElement>('you');
  private readonly buttonAvatar = byId('you-avatar');
  private readonly form = byId<HTMLFormElement>('you-form');
  private readonly input = byId<HTMLInputElement>('you-name');
  private readonly error = byId('you-error');

  constructor() {
    wirePopover({ button: this.button, form: this.form, cancelId: 'you-cancel', open: () => this.open(), close: () => this.close(), save: () => this.save() });
    this.input.addEventListener('input', () => this.showError(null));
    // Another tab of this origin (the hub's, or agentmux's on the same address) changed it.
    window.addEventListener('storage', () => this.render());
    this.render();
  }

  /** The name answers go with, if the user chose one. */
  name(): string | undefined {
    return savedIdentity().name;
  }

  private render(): void {
    const { name, color } = savedIdentity();
    this.buttonAvatar.replaceChildren(avatar({ name: name || '?', color: color ?? COLORS[5]! }, { size: 'md' }));
    const label = name ? `You answer as ${name}. Click to change your name.` : 'Your name: the workspaces record it with your answers';
    this.button.title = label;
    this.button.setAttribute('aria-label', label);
    this.button.dataset.name = name ?? '';
  }

  private open(): void {
    this.input.value = this.name() ?? '';
    this.input.placeholder = 'Your name';
    this.showError(null);
    this.form.hidden = false;
    this.button.setAttribute('aria-expanded', 'true');
    this.input.focus();
    this.input.select();
  }

  private close(): void {
    this.form.hidden = true;
    this.button.setAttribute('aria-expanded', 'false');
  }

  private save(): void {
    const name = this.input.value.trim();
    if (!name) {
      this.showError('Enter a name: the workspaces record it with your answers.');
      return;
    }
    const long = nameTooLong(name, MAX_BY_BYTES);
    if (long) {
      this.showError(long);
      return;
    }
    saveName(name);
    this.render();
    this.close();
  }

  private showError(message: string | null): void {
    this.error.textContent = message ?? '';
    this.error.hidden = message === null;
    this.input.toggleAttribute('aria-invalid', message !== null);
  }
}
