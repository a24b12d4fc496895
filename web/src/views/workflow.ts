// The workflow panel: the steps of the BMAD-style workflow the server reads
// from the workspace, or from a session's worktree, the current one
// highlighted, and a progress bar.

import { byId, h } from '../shared/dom';
import type { StepStatus, Workflow } from '../shared/types';

const STATUS_LABEL: Record<StepStatus, string> = {
  completed: 'done',
  in_progress: 'in progress',
  pending: 'pending',
};

export class WorkflowPanel {
  private readonly steps = byId('workflow-steps');
  private readonly progress = byId('workflow-progress');
  private readonly bar = byId('workflow-bar');
  private readonly summary = byId('workflow-summary');
  private readonly fileEl = byId<HTMLButtonElement>('workflow-file');
  private readonly panel = byId('workflow');
  private readonly sourceEl = byId('workflow-source');
  private file: string | null = null;
  /** Whose workflow is shown: a session's (its worktree's), or null for the workspace's. */
  private source: { sessionId: string; label: string } | null = null;

  constructor(open: (path: string) => void) {
    this.fileEl.addEventListener('click', () => {
      if (this.file) open(this.file);
    });
    this.render(null);
  }

  /** The workspace's workflow file (workspace-relative), from GET /api/workflow. */
  setFile(file: string | null): void {
    this.file = file;
    this.renderFile();
  }

  /**
   * Says whose workflow render() shows: a session's (label: its branch or
   * name), or the workspace's (null). The workspace's file link is shown
   * only with the workspace's workflow.
   */
  setSource(source: { sessionId: string; label: string } | null): void {
    this.source = source;
    if (source) this.panel.dataset.sessionId = source.sessionId;
    else delete this.panel.dataset.sessionId;
    this.sourceEl.hidden = !source;
    this.sourceEl.textContent = source ? source.label : '';
    this.sourceEl.title = source ? `The workflow in the worktree of ${source.label}` : '';
    this.renderFile();
  }

  private renderFile(): void {
    const file = this.source ? null : this.file;
    this.fileEl.hidden = !file;
    this.fileEl.textContent = file ?? '';
    this.fileEl.title = file ? `Open ${file}` : '';
  }

  render(wf: Workflow | null): void {
    const steps = wf?.steps ?? [];
    const done = steps.filter((s) => s.status === 'completed').length;
    const pct = steps.length ? Math.round((done / steps.length) * 100) : 0;
    this.progress.setAttribute('aria-valuenow', String(pct));
    this.progress.setAttribute('aria-valuetext', `${done} of ${steps.length} steps completed`);
    this.bar.style.width = `${pct}%`;
    this.summary.textContent = steps.length ? `${done}/${steps.length}` : '';
    if (!steps.length) {
      this.steps.replaceChildren(h('li', { class: 'muted empty-line', text: 'No workflow yet. agentmux follows bmm-workflow-status.yaml and sprint-status.yaml in the workspace.' }));
      return;
    }
    this.steps.replaceChildren(
      ...steps.map((s) => {
        const current = s.name === wf?.currentStep;
        return h('li', {
          class: `step step-${s.status}${current ? ' current' : ''}`,
          'data-testid': 'workflow-step',
          'data-name': s.name,
          'data-status': s.status,
          'data-current': current ? 'true' : null,
          'aria-current': current ? 'step' : null,
          title: `${s.displayName || s.name}: ${STATUS_LABEL[s.status] ?? s.status}`,
        },
        h('span', { class: 'step-mark', 'aria-hidden': 'true' }),
        h('span', { class: 'step-name', text: s.displayName || s.name }),
        );
      }),
    );
  }
}
