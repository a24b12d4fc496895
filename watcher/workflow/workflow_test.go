package workflow

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// step is shorthand for a Step in the tables below.
func step(name string, st StepStatus, display string) Step {
	return Step{Name: name, Status: st, DisplayName: display}
}

const (
	c = StepCompleted
	i = StepInProgress
	p = StepPending
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
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
				step("brainstorm-project", c, ""),
				step("research", c, ""),
				step("product-brief", c, ""),
				step("prd", c, ""),
				step("validate-prd", p, ""),
				step("create-design", p, ""),
				step("create-architecture", p, ""),
				step("test-design", p, ""),
				step("validate-architecture", p, ""),
				step("solutioning-gate-check", p, ""),
				step("sprint-planning", p, ""),
			},
			current:   "validate-prd",
			completed: []string{"brainstorm-project", "research", "product-brief", "prd"},
		},
		{
			// Shape 2: a list of phases, each with its workflows.
			file: "phase-list.yaml",
			steps: []Step{
				step("brainstorm", c, "Brainstorming Session"),
				step("research", c, "Research"),
				step("product-brief", c, "Product Brief"),
				step("prd", c, "Product Requirements Document"),
				step("ux-design", i, "UX Design"),
				step("architecture", p, "System Architecture"),
				step("epics-stories", p, "Epics & Stories"),
				step("implementation-readiness", p, "Implementation Readiness Check"),
				step("sprint-planning", p, "Sprint Planning"),
			},
			current:   "ux-design",
			completed: []string{"brainstorm", "research", "product-brief", "prd"},
		},
		{
			// Shape 3: keyed phases at the top level.
			file: "keyed-phases.yaml",
			steps: []Step{
				step("brainstorm-project", c, "Brainstorm Project"),
				step("product-brief", c, "Product Brief"),
				step("prd", c, "PRD"),
				step("ux-spec", i, "UX Specification"),
				step("architecture", p, "Architecture"),
				step("tech-spec", p, "Tech Spec"),
			},
			current:   "ux-spec",
			completed: []string{"brainstorm-project", "product-brief", "prd"},
		},
		{
			// Shape 3 as flat maps, with a workflow_status holding only
			// metadata (current_phase, next_workflow, ...).
			file: "keyed-phases-flat.yaml",
			steps: []Step{
				step("product-brief", c, ""),
				step("research", c, ""),
				step("create-prd", c, ""),
				step("create-architecture", i, ""),
				step("create-ux-design", p, ""),
			},
			current:   "create-architecture",
			completed: []string{"product-brief", "research", "create-prd"},
		},
		{
			// Shape 3 under workflow_status.
			file: "keyed-phases-nested.yaml",
			steps: []Step{
				step("research", c, "Market Research"),
				step("prd", c, "PRD"),
				step("ux", p, "UX Design"),
			},
			current:   "ux",
			completed: []string{"research", "prd"},
		},
		{
			// Shape 4: sprint-status.yaml.
			file: "sprint-status.yaml",
			steps: []Step{
				step("epic-1", c, ""),
				step("1-1-project-setup", c, ""),
				step("1-2-user-authentication", c, ""),
				step("epic-1-retrospective", c, ""),
				step("epic-2", i, ""),
				step("2-1-lamp-registry", c, ""),
				step("2-2-lamp-scheduling", i, ""),
				step("2-3-night-mode", i, ""),
				step("2-4-notifications", i, ""),
				step("2-5-offline-sync", p, ""),
				step("epic-2-retrospective", p, ""),
				step("epic-3", p, ""),
				step("3-1-usage-reports", p, ""),
				step("epic-3-retrospective", p, ""),
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
				step("analysis", c, "Analysis"),
				step("planning", c, "Planning"),
				step("solutioning", i, "Solutioning"),
				step("implementation", p, ""),
			},
			current:   "solutioning",
			completed: []string{"analysis", "planning"},
		},
		{
			// Both workflow_status and development_status: workflow first,
			// whatever the order in the file.
			file: "combined.yaml",
			steps: []Step{
				step("prd", c, ""),
				step("architecture", c, ""),
				step("sprint-planning", c, ""),
				step("epic-1", i, ""),
				step("1-1-setup", c, ""),
				step("1-2-beacon", p, ""),
			},
			current:   "epic-1",
			completed: []string{"prd", "architecture", "sprint-planning", "1-1-setup"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			wf, err := Parse(readFixture(t, tt.file))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			check(t, wf, tt.steps, tt.current, tt.completed)
		})
	}
}

func check(t *testing.T, wf Workflow, steps []Step, current string, completed []string) {
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
			steps:     []Step{step("prd", c, ""), step("arch", c, "")},
			current:   "",
			completed: []string{"prd", "arch"},
		},
		{
			name:    "in progress wins over an earlier pending step",
			yaml:    "workflow_status:\n  a: optional\n  b: done\n  c: review\n",
			steps:   []Step{step("a", p, ""), step("b", c, ""), step("c", i, "")},
			current: "c", completed: []string{"b"},
		},
		{
			name:    "no completed step gives an empty, non-nil list",
			yaml:    "development_status:\n  epic-1: backlog\n",
			steps:   []Step{step("epic-1", p, "")},
			current: "epic-1", completed: []string{},
		},
		{
			name:  "empty value, booleans, dates and numbers",
			yaml:  "workflow_status:\n  prd:\n  ux: true\n  qa: false\n  last_updated: 2025-01-02\n  updated_on: '2025-01-02'\n  level: 3\n  ratio: 0.5\n",
			steps: []Step{step("prd", p, ""), step("ux", c, ""), step("qa", p, "")},
			// "level" and "ratio" are numbers, not statuses.
			current: "prd", completed: []string{"ux"},
		},
		{
			name:    "metadata keys inside workflow_status are not steps",
			yaml:    "workflow_status:\n  current_phase: 2\n  next_workflow: prd\n  notes: see docs\n  next-js-setup: done\n  prd: required\n",
			steps:   []Step{step("next-js-setup", c, ""), step("prd", p, "")},
			current: "prd", completed: []string{"next-js-setup"},
		},
		{
			name: "completed_workflows map of maps",
			yaml: "project_name: MU\ncompleted_workflows:\n  product-brief:\n    output_file: docs/brief.md\n    status: complete\n  prd:\n    output_file: docs/prd.md\n",
			steps: []Step{
				step("product-brief", c, ""),
				step("prd", c, ""),
			},
			current: "", completed: []string{"product-brief", "prd"},
		},
		{
			name: "map of step maps with status and name",
			yaml: "workflow_status:\n  prd: {name: PRD, status: done}\n  arch: {title: Architecture, state: in_progress}\n  meta: {owner: bob}\n",
			steps: []Step{
				step("prd", c, "PRD"),
				step("arch", i, "Architecture"),
			},
			current: "arch", completed: []string{"prd"},
		},
		{
			name: "list of one-entry maps and of items without a status",
			yaml: "workflow_status:\n  - prd: done\n  - architecture: in-progress\n  - id: epics\n  - just a string\n",
			steps: []Step{
				step("prd", c, ""),
				step("architecture", i, ""),
				step("epics", p, ""),
			},
			current: "architecture", completed: []string{"prd"},
		},
		{
			name: "phases list under a phases key, workflows as a map",
			yaml: "phases:\n  - name: Planning\n    workflows:\n      prd: docs/prd.md\n      ux: optional\n",
			steps: []Step{
				step("prd", c, ""),
				step("ux", p, ""),
			},
			current: "ux", completed: []string{"prd"},
		},
		{
			name:    "a duplicate step keeps its first occurrence",
			yaml:    "phase_1:\n  workflows: [{id: prd, status: done}]\nphase_2:\n  workflows: [{id: prd, status: required}, {id: arch, status: required}]\n",
			steps:   []Step{step("prd", c, ""), step("arch", p, "")},
			current: "arch", completed: []string{"prd"},
		},
		{
			name:    "a duplicate key keeps its first value",
			yaml:    "workflow_status:\n  prd: done\n  prd: required\n  ux: optional\n",
			steps:   []Step{step("prd", c, ""), step("ux", p, "")},
			current: "ux", completed: []string{"prd"},
		},
		{
			name: "anchors, aliases and merge keys",
			yaml: "base: &b {status: done}\nworkflow_status:\n  prd: {<<: *b, name: PRD}\n  arch: *b\n",
			steps: []Step{
				step("prd", c, "PRD"),
				step("arch", c, ""),
			},
			current: "", completed: []string{"prd", "arch"},
		},
		{
			name: "steps with display_name and windows paths",
			yaml: "steps:\n  - {name: brief, display_name: Brief, status: 'C:\\docs\\brief'}\n  - {name: prd, status: 'TODO'}\n",
			steps: []Step{
				step("brief", c, "Brief"),
				step("prd", p, ""),
			},
			current: "prd", completed: []string{"brief"},
		},
		{
			name: "several documents",
			yaml: "---\nworkflow_status: {prd: done}\n---\ndevelopment_status: {epic-1: in-progress}\n",
			steps: []Step{
				step("prd", c, ""),
				step("epic-1", i, ""),
			},
			current: "epic-1", completed: []string{"prd"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wf, err := Parse([]byte(tt.yaml))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			check(t, wf, tt.steps, tt.current, tt.completed)
		})
	}
}

func TestParseWorkflowStatusWords(t *testing.T) {
	tests := []struct {
		word string
		want StepStatus
	}{
		// File paths mean the step's output exists.
		{"docs/prd.md", c},
		{"prd.md", c},
		{"docs/sprint-status.yaml", c},
		{"architecture.YML", c},
		{"/home/dev/project/docs/ux.md", c},
		{`C:\work\docs\prd`, c},
		{"{project-root}/docs/brief", c},
		{"review.md", c},
		// Completed.
		{"done", c},
		{"Done", c},
		{"  DONE  ", c},
		{"complete", c},
		{"completed", c},
		{"Completed", c},
		{"skipped", c},
		{"contexted", c},
		{"approved", c},
		{"superseded", c},
		{"n/a", c},
		{"done (2025-11-07)", c},
		{"✅ done", c},
		{"done ✅ APPROVED", c},
		// In progress.
		{"in-progress", i},
		{"in_progress", i},
		{"In Progress", i},
		{"IN-PROGRESS", i},
		{"review", i},
		{"ready-for-dev", i},
		{"ready_for_dev", i},
		{"Ready For Dev", i},
		{"started", i},
		{"active", i},
		{"wip", i},
		{"in-progress/review", i},
		// Pending.
		{"required", p},
		{"Required", p},
		{"optional", p},
		{"recommended", p},
		{"conditional", p},
		{"backlog", p},
		{"pending", p},
		{"not-started", p},
		{"not_started", p},
		{"Not Started", p},
		{"todo", p},
		{"TODO", p},
		{"drafted", p},
		{"blocked", p},
		{"on-hold", p},
		// Unknown words are pending.
		{"frobnicated", p},
		{"42x", p},
		{"{{workflow_items}}", p},
	}
	for _, tt := range tests {
		t.Run(tt.word, func(t *testing.T) {
			if got := statusWord(tt.word, StepPending); got != tt.want {
				t.Errorf("statusWord(%q) = %q, want %q", tt.word, got, tt.want)
			}
			// And end to end, as a quoted flat-map value.
			yml := "workflow_status:\n  step: " + strings.ReplaceAll(quote(tt.word), "\n", " ") + "\n"
			wf, err := Parse([]byte(yml))
			if err != nil {
				t.Fatalf("Parse(%q): %v", yml, err)
			}
			if len(wf.Steps) != 1 || wf.Steps[0].Status != tt.want {
				t.Errorf("Parse(%q).Steps = %+v, want status %q", yml, wf.Steps, tt.want)
			}
		})
	}
}

// quote single-quotes a YAML scalar.
func quote(s string) string {
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
			wf, err := Parse(readFixture(t, f))
			if err == nil {
				t.Fatalf("Parse: no error, got %+v", wf)
			}
			if !reflect.DeepEqual(wf, Workflow{}) {
				t.Errorf("Parse returned %+v with its error", wf)
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
			if wf, err := Parse([]byte(yml)); err == nil {
				t.Fatalf("Parse(%q): no error, got %+v", yml, wf)
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
	wf, err := Parse([]byte(b.String()))
	if err != nil {
		t.Fatalf("Parse: %v", err)
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
		if got := IsFile(tt.rel); got != tt.want {
			t.Errorf("IsFile(%q) = %v, want %v", tt.rel, got, tt.want)
		}
	}
}

func FuzzParseWorkflow(f *testing.F) {
	entries, err := os.ReadDir(filepath.Join("testdata"))
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		f.Add(readFixture(f, e.Name()))
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
		wf, err := Parse(data)
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
