package watcher

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// wfStep is shorthand for a Step in the tables below.
func wfStep(name string, st StepStatus, display string) Step {
	return Step{Name: name, Status: st, DisplayName: display}
}

const (
	wfC = StepCompleted
	wfI = StepInProgress
	wfP = StepPending
)

func wfReadFixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "workflow", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestParseWorkflowFixtures(t *testing.T) {
	tests := []struct {
		file      string
		steps     []Step
		current   string
		completed []string
	}{
		{
			// Shape 1: flat map of id to status word or output path.
			file: "flat-map.yaml",
			steps: []Step{
				wfStep("brainstorm-project", wfC, ""),
				wfStep("research", wfC, ""),
				wfStep("product-brief", wfC, ""),
				wfStep("prd", wfC, ""),
				wfStep("validate-prd", wfP, ""),
				wfStep("create-design", wfP, ""),
				wfStep("create-architecture", wfP, ""),
				wfStep("test-design", wfP, ""),
				wfStep("validate-architecture", wfP, ""),
				wfStep("solutioning-gate-check", wfP, ""),
				wfStep("sprint-planning", wfP, ""),
			},
			current:   "validate-prd",
			completed: []string{"brainstorm-project", "research", "product-brief", "prd"},
		},
		{
			// Shape 2: a list of phases, each with its workflows.
			file: "phase-list.yaml",
			steps: []Step{
				wfStep("brainstorm", wfC, "Brainstorming Session"),
				wfStep("research", wfC, "Research"),
				wfStep("product-brief", wfC, "Product Brief"),
				wfStep("prd", wfC, "Product Requirements Document"),
				wfStep("ux-design", wfI, "UX Design"),
				wfStep("architecture", wfP, "System Architecture"),
				wfStep("epics-stories", wfP, "Epics & Stories"),
				wfStep("implementation-readiness", wfP, "Implementation Readiness Check"),
				wfStep("sprint-planning", wfP, "Sprint Planning"),
			},
			current:   "ux-design",
			completed: []string{"brainstorm", "research", "product-brief", "prd"},
		},
		{
			// Shape 3: keyed phases at the top level.
			file: "keyed-phases.yaml",
			steps: []Step{
				wfStep("brainstorm-project", wfC, "Brainstorm Project"),
				wfStep("product-brief", wfC, "Product Brief"),
				wfStep("prd", wfC, "PRD"),
				wfStep("ux-spec", wfI, "UX Specification"),
				wfStep("architecture", wfP, "Architecture"),
				wfStep("tech-spec", wfP, "Tech Spec"),
			},
			current:   "ux-spec",
			completed: []string{"brainstorm-project", "product-brief", "prd"},
		},
		{
			// Shape 3 as flat maps, with a workflow_status holding only
			// metadata (current_phase, next_workflow, ...).
			file: "keyed-phases-flat.yaml",
			steps: []Step{
				wfStep("product-brief", wfC, ""),
				wfStep("research", wfC, ""),
				wfStep("create-prd", wfC, ""),
				wfStep("create-architecture", wfI, ""),
				wfStep("create-ux-design", wfP, ""),
			},
			current:   "create-architecture",
			completed: []string{"product-brief", "research", "create-prd"},
		},
		{
			// Shape 3 under workflow_status.
			file: "keyed-phases-nested.yaml",
			steps: []Step{
				wfStep("research", wfC, "Market Research"),
				wfStep("prd", wfC, "PRD"),
				wfStep("ux", wfP, "UX Design"),
			},
			current:   "ux",
			completed: []string{"research", "prd"},
		},
		{
			// Shape 4: sprint-status.yaml.
			file: "sprint-status.yaml",
			steps: []Step{
				wfStep("epic-1", wfC, ""),
				wfStep("1-1-project-setup", wfC, ""),
				wfStep("1-2-user-authentication", wfC, ""),
				wfStep("epic-1-retrospective", wfC, ""),
				wfStep("epic-2", wfI, ""),
				wfStep("2-1-lamp-registry", wfC, ""),
				wfStep("2-2-lamp-scheduling", wfI, ""),
				wfStep("2-3-night-mode", wfI, ""),
				wfStep("2-4-notifications", wfI, ""),
				wfStep("2-5-offline-sync", wfP, ""),
				wfStep("epic-2-retrospective", wfP, ""),
				wfStep("epic-3", wfP, ""),
				wfStep("3-1-usage-reports", wfP, ""),
				wfStep("epic-3-retrospective", wfP, ""),
			},
			current: "epic-2",
			completed: []string{
				"epic-1", "1-1-project-setup", "1-2-user-authentication",
				"epic-1-retrospective", "2-1-lamp-registry",
			},
		},
		{
			// The protocol's own .bmad/bmm/status file.
			file: "bmad-status.yaml",
			steps: []Step{
				wfStep("analysis", wfC, "Analysis"),
				wfStep("planning", wfC, "Planning"),
				wfStep("solutioning", wfI, "Solutioning"),
				wfStep("implementation", wfP, ""),
			},
			current:   "solutioning",
			completed: []string{"analysis", "planning"},
		},
		{
			// Both workflow_status and development_status: workflow first,
			// whatever the order in the file.
			file: "combined.yaml",
			steps: []Step{
				wfStep("prd", wfC, ""),
				wfStep("architecture", wfC, ""),
				wfStep("sprint-planning", wfC, ""),
				wfStep("epic-1", wfI, ""),
				wfStep("1-1-setup", wfC, ""),
				wfStep("1-2-beacon", wfP, ""),
			},
			current:   "epic-1",
			completed: []string{"prd", "architecture", "sprint-planning", "1-1-setup"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			wf, err := ParseWorkflow(wfReadFixture(t, tt.file))
			if err != nil {
				t.Fatalf("ParseWorkflow: %v", err)
			}
			wfCheck(t, wf, tt.steps, tt.current, tt.completed)
		})
	}
}

func wfCheck(t *testing.T, wf Workflow, steps []Step, current string, completed []string) {
	t.Helper()
	if !reflect.DeepEqual(wf.Steps, steps) {
		t.Errorf("Steps:\n got %+v\nwant %+v", wf.Steps, steps)
	}
	if wf.CurrentStep != current {
		t.Errorf("CurrentStep = %q, want %q", wf.CurrentStep, current)
	}
	if completed == nil {
		completed = []string{}
	}
	if !reflect.DeepEqual(wf.CompletedSteps, completed) {
		t.Errorf("CompletedSteps = %q, want %q", wf.CompletedSteps, completed)
	}
}

func TestParseWorkflowInline(t *testing.T) {
	tests := []struct {
		name      string
		yaml      string
		steps     []Step
		current   string
		completed []string
	}{
		{
			name:      "all completed gives no current step",
			yaml:      "workflow_status:\n  prd: docs/prd.md\n  arch: done\n",
			steps:     []Step{wfStep("prd", wfC, ""), wfStep("arch", wfC, "")},
			current:   "",
			completed: []string{"prd", "arch"},
		},
		{
			name:    "in progress wins over an earlier pending step",
			yaml:    "workflow_status:\n  a: optional\n  b: done\n  c: review\n",
			steps:   []Step{wfStep("a", wfP, ""), wfStep("b", wfC, ""), wfStep("c", wfI, "")},
			current: "c", completed: []string{"b"},
		},
		{
			name:    "no completed step gives an empty, non-nil list",
			yaml:    "development_status:\n  epic-1: backlog\n",
			steps:   []Step{wfStep("epic-1", wfP, "")},
			current: "epic-1", completed: []string{},
		},
		{
			name:  "empty value, booleans, dates and numbers",
			yaml:  "workflow_status:\n  prd:\n  ux: true\n  qa: false\n  last_updated: 2025-01-02\n  updated_on: '2025-01-02'\n  level: 3\n  ratio: 0.5\n",
			steps: []Step{wfStep("prd", wfP, ""), wfStep("ux", wfC, ""), wfStep("qa", wfP, "")},
			// "level" and "ratio" are numbers, not statuses.
			current: "prd", completed: []string{"ux"},
		},
		{
			name:    "metadata keys inside workflow_status are not steps",
			yaml:    "workflow_status:\n  current_phase: 2\n  next_workflow: prd\n  notes: see docs\n  next-js-setup: done\n  prd: required\n",
			steps:   []Step{wfStep("next-js-setup", wfC, ""), wfStep("prd", wfP, "")},
			current: "prd", completed: []string{"next-js-setup"},
		},
		{
			name: "completed_workflows map of maps",
			yaml: "project_name: MU\ncompleted_workflows:\n  product-brief:\n    output_file: docs/brief.md\n    status: complete\n  prd:\n    output_file: docs/prd.md\n",
			steps: []Step{
				wfStep("product-brief", wfC, ""),
				wfStep("prd", wfC, ""),
			},
			current: "", completed: []string{"product-brief", "prd"},
		},
		{
			name: "map of step maps with status and name",
			yaml: "workflow_status:\n  prd: {name: PRD, status: done}\n  arch: {title: Architecture, state: in_progress}\n  meta: {owner: bob}\n",
			steps: []Step{
				wfStep("prd", wfC, "PRD"),
				wfStep("arch", wfI, "Architecture"),
			},
			current: "arch", completed: []string{"prd"},
		},
		{
			name: "list of one-entry maps and of items without a status",
			yaml: "workflow_status:\n  - prd: done\n  - architecture: in-progress\n  - id: epics\n  - just a string\n",
			steps: []Step{
				wfStep("prd", wfC, ""),
				wfStep("architecture", wfI, ""),
				wfStep("epics", wfP, ""),
			},
			current: "architecture", completed: []string{"prd"},
		},
		{
			name: "phases list under a phases key, workflows as a map",
			yaml: "phases:\n  - name: Planning\n    workflows:\n      prd: docs/prd.md\n      ux: optional\n",
			steps: []Step{
				wfStep("prd", wfC, ""),
				wfStep("ux", wfP, ""),
			},
			current: "ux", completed: []string{"prd"},
		},
		{
			name:    "a duplicate step keeps its first occurrence",
			yaml:    "phase_1:\n  workflows: [{id: prd, status: done}]\nphase_2:\n  workflows: [{id: prd, status: required}, {id: arch, status: required}]\n",
			steps:   []Step{wfStep("prd", wfC, ""), wfStep("arch", wfP, "")},
			current: "arch", completed: []string{"prd"},
		},
		{
			name:    "a duplicate key keeps its first value",
			yaml:    "workflow_status:\n  prd: done\n  prd: required\n  ux: optional\n",
			steps:   []Step{wfStep("prd", wfC, ""), wfStep("ux", wfP, "")},
			current: "ux", completed: []string{"prd"},
		},
		{
			name: "anchors, aliases and merge keys",
			yaml: "base: &b {status: done}\nworkflow_status:\n  prd: {<<: *b, name: PRD}\n  arch: *b\n",
			steps: []Step{
				wfStep("prd", wfC, "PRD"),
				wfStep("arch", wfC, ""),
			},
			current: "", completed: []string{"prd", "arch"},
		},
		{
			name: "steps with display_name and windows paths",
			yaml: "steps:\n  - {name: brief, display_name: Brief, status: 'C:\\docs\\brief'}\n  - {name: prd, status: 'TODO'}\n",
			steps: []Step{
				wfStep("brief", wfC, "Brief"),
				wfStep("prd", wfP, ""),
			},
			current: "prd", completed: []string{"brief"},
		},
		{
			name: "several documents",
			yaml: "---\nworkflow_status: {prd: done}\n---\ndevelopment_status: {epic-1: in-progress}\n",
			steps: []Step{
				wfStep("prd", wfC, ""),
				wfStep("epic-1", wfI, ""),
			},
			current: "epic-1", completed: []string{"prd"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wf, err := ParseWorkflow([]byte(tt.yaml))
			if err != nil {
				t.Fatalf("ParseWorkflow: %v", err)
			}
			wfCheck(t, wf, tt.steps, tt.current, tt.completed)
		})
	}
}

func TestParseWorkflowStatusWords(t *testing.T) {
	tests := []struct {
		word string
		want StepStatus
	}{
		// File paths mean the step's output exists.
		{"docs/prd.md", wfC},
		{"prd.md", wfC},
		{"docs/sprint-status.yaml", wfC},
		{"architecture.YML", wfC},
		{"/home/dev/project/docs/ux.md", wfC},
		{`C:\work\docs\prd`, wfC},
		{"{project-root}/docs/brief", wfC},
		{"review.md", wfC},
		// Completed.
		{"done", wfC},
		{"Done", wfC},
		{"  DONE  ", wfC},
		{"complete", wfC},
		{"completed", wfC},
		{"Completed", wfC},
		{"skipped", wfC},
		{"contexted", wfC},
		{"approved", wfC},
		{"superseded", wfC},
		{"n/a", wfC},
		{"done (2025-11-07)", wfC},
		{"✅ done", wfC},
		{"done ✅ APPROVED", wfC},
		// In progress.
		{"in-progress", wfI},
		{"in_progress", wfI},
		{"In Progress", wfI},
		{"IN-PROGRESS", wfI},
		{"review", wfI},
		{"ready-for-dev", wfI},
		{"ready_for_dev", wfI},
		{"Ready For Dev", wfI},
		{"started", wfI},
		{"active", wfI},
		{"wip", wfI},
		{"in-progress/review", wfI},
		// Pending.
		{"required", wfP},
		{"Required", wfP},
		{"optional", wfP},
		{"recommended", wfP},
		{"conditional", wfP},
		{"backlog", wfP},
		{"pending", wfP},
		{"not-started", wfP},
		{"not_started", wfP},
		{"Not Started", wfP},
		{"todo", wfP},
		{"TODO", wfP},
		{"drafted", wfP},
		{"blocked", wfP},
		{"on-hold", wfP},
		// Unknown words are pending.
		{"frobnicated", wfP},
		{"42x", wfP},
		{"{{workflow_items}}", wfP},
	}
	for _, tt := range tests {
		t.Run(tt.word, func(t *testing.T) {
			if got := wfStatusWord(tt.word, StepPending); got != tt.want {
				t.Errorf("wfStatusWord(%q) = %q, want %q", tt.word, got, tt.want)
			}
			// And end to end, as a quoted flat-map value.
			yml := "workflow_status:\n  step: " + strings.ReplaceAll(wfQuote(tt.word), "\n", " ") + "\n"
			wf, err := ParseWorkflow([]byte(yml))
			if err != nil {
				t.Fatalf("ParseWorkflow(%q): %v", yml, err)
			}
			if len(wf.Steps) != 1 || wf.Steps[0].Status != tt.want {
				t.Errorf("ParseWorkflow(%q).Steps = %+v, want status %q", yml, wf.Steps, tt.want)
			}
		})
	}
}

// wfQuote single-quotes a YAML scalar.
func wfQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

func TestParseWorkflowErrors(t *testing.T) {
	files := []string{
		"malformed-tabs.yaml",
		"malformed-indent.yaml",
		"empty.yaml",
		"top-level-list.yaml",
		"metadata-only.yaml",
	}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			wf, err := ParseWorkflow(wfReadFixture(t, f))
			if err == nil {
				t.Fatalf("ParseWorkflow: no error, got %+v", wf)
			}
			if !reflect.DeepEqual(wf, Workflow{}) {
				t.Errorf("ParseWorkflow returned %+v with its error", wf)
			}
		})
	}
	inline := map[string]string{
		"whitespace and comments": "  \n# nothing here\n\n",
		"a bare scalar":           "just some text",
		"a number":                "42",
		"null document":           "~",
		"empty workflow map":      "workflow_status: {}\n",
		"empty development list":  "development_status: []\n",
		"phases with no steps":    "phase_1_analysis:\n  name: Analysis\n  workflows: []\n",
		"only unknown keys":       "project: x\nlast_updated: 2025-01-01\nsettings: {a: b}\n",
		"unclosed flow map":       "workflow_status: {prd: done\n",
		"unterminated quote":      "workflow_status:\n  prd: \"done\n",
		"undefined alias":         "workflow_status: *nope\n",
	}
	for name, yml := range inline {
		t.Run(name, func(t *testing.T) {
			if wf, err := ParseWorkflow([]byte(yml)); err == nil {
				t.Fatalf("ParseWorkflow(%q): no error, got %+v", yml, wf)
			}
		})
	}
}

func TestParseWorkflowAliasBomb(t *testing.T) {
	// Each level names the one before it ten times: followed naively this
	// is 10^9 nodes. The parser must finish quickly either way.
	var b strings.Builder
	b.WriteString("a0: &a0 [{id: x, status: done}]\n")
	for i := 1; i <= 9; i++ {
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("{workflows: *a" + string(rune('0'+i-1)) + "}")
		}
		b.WriteString("]\n")
	}
	b.WriteString("workflow_status: *a9\n")
	wf, err := ParseWorkflow([]byte(b.String()))
	if err != nil {
		t.Fatalf("ParseWorkflow: %v", err)
	}
	if len(wf.Steps) != 1 || wf.Steps[0].Name != "x" {
		t.Errorf("Steps = %+v, want the single step x", wf.Steps)
	}
}

func TestIsWorkflowFile(t *testing.T) {
	tests := []struct {
		rel  string
		want bool
	}{
		{"bmm-workflow-status.yaml", true},
		{"bmm-workflow-status.yml", true},
		{"docs/bmm-workflow-status.yaml", true},
		{"_bmad-output/bmm-workflow-status.yaml", true},
		{"sprint-status.yaml", true},
		{"sprint-status.yml", true},
		{"docs/sprint-status.yaml", true},
		{"docs/sprint-artifacts/sprint-status.yaml", true},
		{"_bmad-output/implementation-artifacts/sprint-status.yaml", true},
		{"./docs/sprint-status.yaml", true},
		{".bmad/bmm/status/a.yaml", true},
		{".bmad/bmm/status/main.yml", true},
		{".bmad/bmm/status/Workflow.YAML", true},

		{"", false},
		{".", false},
		{"docs/", false},
		{"xsprint-status.yaml", false},
		{"sprint-status.yaml.bak", false},
		{"docs/sprint-status.yaml~", false},
		{"docs/sprint-status.md", false},
		{"docs/my-sprint-status.yaml", false},
		{"bmm-workflow-status.json", false},
		{"docs/prd.md", false},
		{"docs/workflow-status.yaml", false},
		{".bmad/bmm/status/sub/a.yaml", false},
		{".bmad/bmm/status/a.json", false},
		{".bmad/bmm/status/a.yaml.swp", false},
		{".bmad/bmm/status/.a.yaml", false},
		{".bmad/bmm/status/.yaml", false},
		{".bmad/bmm/status", false},
		{".bmad/bmm/a.yaml", false},
		{"sub/.bmad/bmm/status/a.yaml", false},
		{".bmad/bmm/workflows/status/a.yaml", false},
		// Samples, not the project's.
		{"watcher/testdata/real/sprint-status.yaml", false},
		{"test/fixtures/bmm-workflow-status.yaml", false},
		{"src/__fixtures__/sprint-status.yml", false},
		{"testdata/sprint-status.yaml", false},
		{"mytestdata/sprint-status.yaml", true},
	}
	for _, tt := range tests {
		if got := IsWorkflowFile(tt.rel); got != tt.want {
			t.Errorf("IsWorkflowFile(%q) = %v, want %v", tt.rel, got, tt.want)
		}
	}
}

func FuzzParseWorkflow(f *testing.F) {
	entries, err := os.ReadDir(filepath.Join("testdata", "workflow"))
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		f.Add(wfReadFixture(f, e.Name()))
	}
	for _, s := range []string{
		"workflow_status: {prd: done, ux: review}",
		"workflow_status: [{phase: 1, workflows: [{id: a, status: in_progress}]}]",
		"phase_2_planning: {workflows: [{id: prd, status: docs/prd.md}]}",
		"development_status: {epic-1: done, 1-1-a: in-progress}",
		"steps: [{name: a, status: done}, {name: b}]",
		"a: &a {status: done}\nworkflow_status: {x: *a, <<: *a}",
		"workflow_status:\n\t- x",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		wf, err := ParseWorkflow(data)
		if err != nil {
			if !reflect.DeepEqual(wf, Workflow{}) {
				t.Fatalf("error %v came with a workflow %+v", err, wf)
			}
			return
		}
		if len(wf.Steps) == 0 {
			t.Fatal("no error and no steps")
		}
		seen := map[string]bool{}
		var completed []string
		firstInProgress, firstPending := "", ""
		for _, s := range wf.Steps {
			if s.Name == "" {
				t.Fatalf("a step without a name: %+v", wf.Steps)
			}
			if seen[s.Name] {
				t.Fatalf("step %q listed twice", s.Name)
			}
			seen[s.Name] = true
			switch s.Status {
			case StepCompleted:
				completed = append(completed, s.Name)
			case StepInProgress:
				if firstInProgress == "" {
					firstInProgress = s.Name
				}
			case StepPending:
				if firstPending == "" {
					firstPending = s.Name
				}
			default:
				t.Fatalf("step %q has status %q", s.Name, s.Status)
			}
		}
		want := firstInProgress
		if want == "" {
			want = firstPending
		}
		if wf.CurrentStep != want {
			t.Fatalf("CurrentStep = %q, want %q (steps %+v)", wf.CurrentStep, want, wf.Steps)
		}
		if completed == nil {
			completed = []string{}
		}
		if !reflect.DeepEqual(wf.CompletedSteps, completed) {
			t.Fatalf("CompletedSteps = %q, want %q", wf.CompletedSteps, completed)
		}
	})
}
