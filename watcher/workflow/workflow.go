// Package workflow reads the workflow status files that BMAD projects
// keep (bmm-workflow-status.yaml, sprint-status.yaml and those in
// .bmad/bmm/status) into one list of steps, each completed, in progress or
// pending, for the UI's workflow panel. IsFile says which files those are;
// Parse reads one. The package reads bytes: watching the files is the
// watcher's.
package workflow

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Workflow status files
//
// BMAD's status files are written by an LLM, so Parse accepts every
// shape found in real projects and keeps the file's order of steps:
//
//  1. A flat map, id to status word or output path:
//     workflow_status: {brainstorm-project: docs/brainstorm.md, prd: required}
//  2. A list of phases:
//     workflow_status: [{phase: 1, name: Analysis, workflows: [{id, name, status}]}]
//  3. Keyed phases, at the top level or under workflow_status:
//     phase_1_analysis: {name: Analysis, workflows: [{id, name, status}]}
//     A keyed phase without a workflows list is read as a flat map
//     (phase_1_discovery: {product-brief: completed}).
//  4. Sprint status: development_status: {epic-1: done, 1-2-a-story: review}
//
// plus, at the protocol's own location, a plain steps: [{name, status,
// displayName}] list, and completed_workflows: {id: {status, output_file}}
// (an entry without a status counts as completed there). Other top-level
// keys (project, generated, last_updated, ...) are metadata and ignored, as
// are metadata keys inside a step map (current_phase, next_workflow, notes,
// ...) and entries whose value is a date or a number. Steps from
// development_status come after all the others. A step name seen twice keeps
// its first occurrence.
//
// Status words are read case-insensitively, with '_' and ' ' the same as
// '-'; when the whole value is not a known word its first word is tried
// ("done (2025-11-07)", "✅ done"):
//
//	completed:   a file path (contains '/' or '\', or ends in .md, .yaml, .yml,
//	             .json, .txt, ...), done, complete, completed, finished,
//	             closed, approved, merged, shipped, delivered, passed,
//	             contexted (an epic whose context is written: its stories
//	             carry the work), skipped, skip, superseded, cancelled,
//	             canceled, obsolete, n/a, not-applicable, wont-do
//	in_progress: in-progress, inprogress, wip, started, active, doing,
//	             ongoing, running, current, review, in-review, code-review,
//	             ready-for-review, testing, ready-for-dev
//	pending:     required, optional, recommended, conditional, backlog,
//	             pending, not-started, todo, to-do, drafted, draft, planned,
//	             queued, new, open, proposed, blocked, on-hold, paused,
//	             deferred, waiting; an empty value; any unknown word.
//
// A boolean counts as completed (true) or pending (false).

// Parse reads a workflow status file's content. It returns an error for
// content that is not YAML or holds no recognisable workflow (an empty workflow is
// never returned without an error).
func Parse(data []byte) (wf Workflow, err error) {
	defer func() {
		// The YAML decoder is third-party code fed LLM-written files;
		// whatever it does, a bad file must not take the server down.
		if r := recover(); r != nil {
			wf, err = Workflow{}, fmt.Errorf("workflow: unreadable YAML: %v", r)
		}
	}()

	p := &parser{budget: nodeBudget, seen: map[string]bool{}}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	docs, mappings := 0, 0
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return Workflow{}, fmt.Errorf("workflow: invalid YAML: %w", err)
		}
		docs++
		root := resolve(&doc)
		if root != nil && root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
			root = resolve(root.Content[0])
		}
		if root == nil || root.Kind != yaml.MappingNode {
			continue
		}
		mappings++
		p.root(root)
	}

	switch {
	case docs == 0:
		return Workflow{}, errors.New("workflow: empty file")
	case mappings == 0:
		return Workflow{}, errors.New("workflow: top level is not a mapping")
	}
	steps := append(p.workflow, p.development...)
	if len(steps) == 0 {
		return Workflow{}, errors.New("workflow: no workflow steps found")
	}
	return build(steps), nil
}

// IsFile reports whether rel (a workspace-relative path with forward
// slashes) is a workflow status file: .bmad/bmm/status/*.yaml (or .yml), or any
// file named bmm-workflow-status.yaml / sprint-status.yaml (also .yml) anywhere.
//
// Files in test data and fixture trees (a directory named testdata,
// fixtures, __fixtures__ or test-fixtures on the way) are samples, not the
// project's workflow.
func IsFile(rel string) bool {
	rel = strings.TrimPrefix(rel, "./")
	if rel == "" || strings.HasSuffix(rel, "/") {
		return false
	}
	for dir := range strings.SplitSeq(path.Dir(rel), "/") {
		switch strings.ToLower(dir) {
		case "testdata", "fixtures", "__fixtures__", "test-fixtures":
			return false
		}
	}
	base := path.Base(rel)
	for _, name := range []string{
		"bmm-workflow-status.yaml", "bmm-workflow-status.yml",
		"sprint-status.yaml", "sprint-status.yml",
	} {
		if strings.EqualFold(base, name) {
			return true
		}
	}
	if path.Dir(rel) != ".bmad/bmm/status" || strings.HasPrefix(base, ".") {
		return false
	}
	ext := strings.ToLower(path.Ext(base))
	return (ext == ".yaml" || ext == ".yml") && len(base) > len(ext)
}

// build derives the current and completed steps from the step list.
func build(steps []Step) Workflow {
	wf := Workflow{Steps: steps, CompletedSteps: []string{}}
	firstPending := ""
	for _, s := range steps {
		switch s.Status {
		case StepCompleted:
			wf.CompletedSteps = append(wf.CompletedSteps, s.Name)
		case StepInProgress:
			if wf.CurrentStep == "" {
				wf.CurrentStep = s.Name
			}
		case StepPending:
			if firstPending == "" {
				firstPending = s.Name
			}
		}
	}
	if wf.CurrentStep == "" {
		wf.CurrentStep = firstPending
	}
	return wf
}

// nodeBudget bounds the nodes visited, so that aliases nested many times
// over (a "billion laughs" file) cost no more than a large honest one.
const (
	nodeBudget = 200_000
	maxDepth   = 24
)

// parser collects steps from the decoded documents.
type parser struct {
	workflow    []Step // from workflow_status, phases, steps, ...
	development []Step // from development_status, listed last
	seen        map[string]bool
	budget      int
}

// list says which of the parser's lists a step goes to.
type list int

const (
	workflowList list = iota
	developmentList
)

// root reads a top-level mapping, dispatching on its keys.
func (p *parser) root(n *yaml.Node) {
	for _, kv := range p.entries(n, 0) {
		key := compact(kv.key)
		switch {
		case key == "workflowstatus" || key == "workflow" || key == "workflows" ||
			key == "workflowsteps" || key == "steps" || key == "phases":
			p.container(kv.value, StepPending, workflowList, 1)
		case key == "completedworkflows":
			p.container(kv.value, StepCompleted, workflowList, 1)
		case isPhaseKey(key):
			p.phase(kv.value, workflowList, 1)
		case key == "developmentstatus" || key == "sprintstatus":
			p.container(kv.value, StepPending, developmentList, 1)
		}
	}
}

// phase reads one phase: a mapping holding a list of workflows, a flat
// map of id to status, or directly a list of workflows.
func (p *parser) phase(n *yaml.Node, list list, depth int) {
	n = resolve(n)
	if n == nil || depth > maxDepth {
		return
	}
	if n.Kind == yaml.MappingNode {
		if inner := p.stepsField(n, depth); inner != nil {
			p.container(inner, StepPending, list, depth+1)
			return
		}
	}
	p.container(n, StepPending, list, depth+1)
}

// container reads a node holding steps: a mapping of id to status (or to
// a mapping with a status, or to a phase) or a sequence of step or phase
// mappings. def is the status of a step that names no status.
func (p *parser) container(n *yaml.Node, def StepStatus, list list, depth int) {
	n = resolve(n)
	if n == nil || depth > maxDepth || !p.spend() {
		return
	}
	switch n.Kind {
	case yaml.MappingNode:
		for _, kv := range p.entries(n, depth) {
			p.entry(kv.key, kv.value, def, list, depth)
		}
	case yaml.SequenceNode:
		for _, item := range n.Content {
			p.item(item, def, list, depth)
		}
	}
}

// entry reads one key: value pair of a step map.
func (p *parser) entry(key string, v *yaml.Node, def StepStatus, list list, depth int) {
	v = resolve(v)
	name := strings.TrimSpace(key)
	compact := compact(name)
	if v == nil || name == "" || !p.spend() {
		return
	}
	if isPhaseKey(compact) {
		p.phase(v, list, depth+1)
		return
	}
	if isMetaKey(name) {
		return
	}
	switch v.Kind {
	case yaml.ScalarNode:
		if st, ok := scalarStatus(v, def); ok {
			p.add(list, name, "", st)
		}
	case yaml.MappingNode:
		if p.stepsField(v, depth) != nil {
			p.phase(v, list, depth+1)
			return
		}
		fields := p.fields(v, depth)
		st := def
		if sv, ok := fields["status"]; ok {
			st = nodeStatus(sv, def)
		} else if sv, ok := fields["state"]; ok {
			st = nodeStatus(sv, def)
		} else if def != StepCompleted {
			return // a nested map without a status: not a step
		}
		p.add(list, name, display(fields, ""), st)
	case yaml.SequenceNode:
		// A named list of workflows, e.g. "analysis: [{id, status}]".
		p.container(v, StepPending, list, depth+1)
	}
}

// item reads one element of a step or phase list.
func (p *parser) item(n *yaml.Node, def StepStatus, list list, depth int) {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode || !p.spend() {
		return
	}
	if p.stepsField(n, depth) != nil {
		p.phase(n, list, depth+1)
		return
	}
	fields := p.fields(n, depth)
	nameField := ""
	for _, f := range []string{"id", "key", "workflow", "step", "story", "task", "slug", "name", "title"} {
		if s, ok := scalarText(fields[f]); ok && s != "" {
			nameField = f
			break
		}
	}
	if nameField == "" {
		// "- prd: done": a one-entry map reads as a step map.
		if len(n.Content) == 2 {
			if k := resolve(n.Content[0]); k != nil && k.Kind == yaml.ScalarNode {
				p.entry(k.Value, n.Content[1], def, list, depth)
			}
		}
		return
	}
	name, _ := scalarText(fields[nameField])
	st := def
	if sv, ok := fields["status"]; ok {
		st = nodeStatus(sv, def)
	} else if sv, ok := fields["state"]; ok {
		st = nodeStatus(sv, def)
	}
	p.add(list, name, display(fields, nameField), st)
}

// add appends a step unless one of that name is already listed.
func (p *parser) add(list list, name, display string, st StepStatus) {
	if name == "" || p.seen[name] {
		return
	}
	p.seen[name] = true
	s := Step{Name: name, Status: st, DisplayName: display}
	if list == developmentList {
		p.development = append(p.development, s)
	} else {
		p.workflow = append(p.workflow, s)
	}
}

// spend takes one node from the budget, reporting whether any was left.
func (p *parser) spend() bool {
	if p.budget <= 0 {
		return false
	}
	p.budget--
	return true
}

// kv is one entry of a mapping, its key as text.
type kv struct {
	key   string
	value *yaml.Node
}

// entries lists a mapping's entries in order, expanding "<<" merge keys.
func (p *parser) entries(n *yaml.Node, depth int) []kv {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode || depth > maxDepth {
		return nil
	}
	var out []kv
	for i := 0; i+1 < len(n.Content); i += 2 {
		if !p.spend() {
			break
		}
		k := resolve(n.Content[i])
		if k == nil || k.Kind != yaml.ScalarNode {
			continue
		}
		v := n.Content[i+1]
		if k.Tag == "!!merge" || (k.Value == "<<" && k.Style == 0) {
			m := resolve(v)
			if m == nil {
				continue
			}
			if m.Kind == yaml.SequenceNode {
				for _, mm := range m.Content {
					out = append(out, p.entries(mm, depth+1)...)
				}
			} else {
				out = append(out, p.entries(m, depth+1)...)
			}
			continue
		}
		out = append(out, kv{key: k.Value, value: v})
	}
	return out
}

// fields maps a mapping's compacted keys to their values, the first of
// each key winning.
func (p *parser) fields(n *yaml.Node, depth int) map[string]*yaml.Node {
	out := map[string]*yaml.Node{}
	for _, kv := range p.entries(n, depth) {
		k := compact(kv.key)
		if _, dup := out[k]; !dup {
			out[k] = kv.value
		}
	}
	return out
}

// stepsField returns a phase mapping's list of workflows, or nil when it
// has none.
func (p *parser) stepsField(n *yaml.Node, depth int) *yaml.Node {
	fields := p.fields(n, depth)
	for _, f := range []string{"workflows", "steps", "stories", "tasks", "items"} {
		if v := resolve(fields[f]); v != nil && (v.Kind == yaml.SequenceNode || v.Kind == yaml.MappingNode) {
			return v
		}
	}
	return nil
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 8; i++ {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.AliasNode {
		return nil
	}
	return n
}

// display picks a step's human-readable name from its fields, skipping
// the field that gave the step its name.
func display(fields map[string]*yaml.Node, nameField string) string {
	for _, f := range []string{"displayname", "name", "title", "label"} {
		if f == nameField {
			continue
		}
		if s, ok := scalarText(fields[f]); ok && s != "" {
			return s
		}
	}
	return ""
}

// scalarText is a scalar node's trimmed text.
func scalarText(n *yaml.Node) (string, bool) {
	n = resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", false
	}
	return strings.TrimSpace(n.Value), true
}

// scalarStatus reads the status of a "key: scalar" step entry. It
// reports false for values that are no status at all: numbers, dates.
func scalarStatus(v *yaml.Node, def StepStatus) (StepStatus, bool) {
	switch v.Tag {
	case "!!null":
		return def, true
	case "!!bool":
		return boolValue(v.Value), true
	case "!!int", "!!float", "!!timestamp":
		return "", false
	}
	if isDate(strings.TrimSpace(v.Value)) {
		return "", false
	}
	return statusWord(v.Value, def), true
}

// nodeStatus reads the value of a status: field.
func nodeStatus(v *yaml.Node, def StepStatus) StepStatus {
	v = resolve(v)
	if v == nil || v.Kind != yaml.ScalarNode {
		return StepPending
	}
	switch v.Tag {
	case "!!null":
		return def
	case "!!bool":
		return boolValue(v.Value)
	}
	return statusWord(v.Value, def)
}

func boolValue(s string) StepStatus {
	switch strings.ToLower(s) {
	case "true", "yes", "on", "y":
		return StepCompleted
	}
	return StepPending
}

// statusWords maps normalised status words to a step status.
var statusWords = map[string]StepStatus{
	"done": StepCompleted, "complete": StepCompleted, "completed": StepCompleted,
	"finished": StepCompleted, "closed": StepCompleted, "approved": StepCompleted,
	"merged": StepCompleted, "shipped": StepCompleted, "delivered": StepCompleted,
	"passed": StepCompleted, "contexted": StepCompleted,
	"skipped": StepCompleted, "skip": StepCompleted, "superseded": StepCompleted,
	"cancelled": StepCompleted, "canceled": StepCompleted, "obsolete": StepCompleted,
	"n/a": StepCompleted, "n-a": StepCompleted, "na": StepCompleted,
	"not-applicable": StepCompleted, "wont-do": StepCompleted, "won't-do": StepCompleted,

	"in-progress": StepInProgress, "inprogress": StepInProgress, "wip": StepInProgress,
	"started": StepInProgress, "active": StepInProgress, "doing": StepInProgress,
	"ongoing": StepInProgress, "running": StepInProgress, "current": StepInProgress,
	"review": StepInProgress, "in-review": StepInProgress, "code-review": StepInProgress,
	"ready-for-review": StepInProgress, "testing": StepInProgress,
	"ready-for-dev": StepInProgress,

	"required": StepPending, "optional": StepPending, "recommended": StepPending,
	"conditional": StepPending, "backlog": StepPending, "pending": StepPending,
	"not-started": StepPending, "todo": StepPending, "to-do": StepPending,
	"drafted": StepPending, "draft": StepPending, "planned": StepPending,
	"queued": StepPending, "new": StepPending, "open": StepPending,
	"proposed": StepPending, "blocked": StepPending, "on-hold": StepPending,
	"paused": StepPending, "deferred": StepPending, "waiting": StepPending,
}

// fileExts are the endings that make a status value an output file.
var fileExts = []string{
	".md", ".markdown", ".yaml", ".yml", ".json", ".txt", ".html", ".htm",
	".pdf", ".xml", ".csv", ".adoc", ".rst", ".sql", ".docx", ".svg", ".png",
}

// statusWord maps a status value to a step status; see the table above.
// An empty value gives def, an unknown one pending.
func statusWord(raw string, def StepStatus) StepStatus {
	s := strings.TrimSpace(raw)
	if s == "" {
		return def
	}
	norm := normWord(s)
	if st, ok := statusWords[norm]; ok {
		return st
	}
	lower := strings.ToLower(s)
	for _, ext := range fileExts {
		if len(lower) > len(ext) && strings.HasSuffix(lower, ext) {
			return StepCompleted
		}
	}
	if st, ok := statusWords[firstWord(norm)]; ok {
		return st
	}
	if strings.ContainsAny(s, `/\`) {
		return StepCompleted
	}
	return StepPending
}

// normWord lower-cases a status word and makes '_' and ' ' into '-'.
func normWord(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	return strings.Map(func(r rune) rune {
		if r == '_' || r == ' ' {
			return '-'
		}
		return r
	}, s)
}

// firstWord is the first run of letters, digits, hyphens and
// apostrophes in a normalised status value, e.g. "done" in "✅-done-(2025-11-07)".
func firstWord(norm string) string {
	isWord := func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '\''
	}
	start := strings.IndexFunc(norm, isWord)
	if start < 0 {
		return ""
	}
	end := start
	for end < len(norm) {
		r := rune(norm[end])
		if !isWord(r) && r != '-' {
			break
		}
		end++
	}
	return strings.Trim(norm[start:end], "-")
}

// compact lower-cases a key and drops '_', '-' and spaces, so that
// displayName, display_name and display-name compare equal.
func compact(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r == ' ' {
			return -1
		}
		return r
	}, s)
}

// isPhaseKey reports whether a compacted key names a phase:
// phase_1_analysis, phase2, Phase-3-Solutioning.
func isPhaseKey(compact string) bool {
	rest, ok := strings.CutPrefix(compact, "phase")
	return ok && rest != "" && rest[0] >= '0' && rest[0] <= '9'
}

// metaKeys are keys that, inside a step map or a phase, are metadata
// rather than steps (compacted: see compact).
var metaKeys = map[string]bool{
	"generated": true, "generatedat": true, "generatedon": true,
	"project": true, "projectname": true, "projecttype": true, "projectlevel": true,
	"projectkey": true, "projectid": true, "projectmetadata": true,
	"fieldtype": true, "selectedtrack": true, "track": true, "workflowpath": true,
	"lastupdated": true, "updated": true, "updatedat": true, "updatedon": true,
	"created": true, "createdat": true, "date": true, "timestamp": true,
	"notes": true, "note": true, "comment": true, "comments": true,
	"description": true, "summary": true, "userdescription": true,
	"name": true, "title": true, "displayname": true, "label": true,
	"phase": true, "phasename": true, "phasenumber": true, "id": true,
	"status": true, "state": true, "agent": true, "command": true, "owner": true,
	"version": true, "trackingsystem": true, "storylocation": true,
	"output": true, "outputfile": true, "file": true, "path": true,
	"condition": true, "selected": true, "progress": true, "percentcomplete": true,
}

// isMetaKey reports whether a step map's key is metadata: a known
// metadata name, or snake_case current_*, next_*, last_* (step ids are
// kebab-case, so next-js-setup stays a step).
func isMetaKey(key string) bool {
	lower := strings.ToLower(key)
	for _, prefix := range []string{"current_", "next_", "last_"} {
		if strings.HasPrefix(lower, prefix) {
			return true
		}
	}
	return metaKeys[compact(key)]
}

// isDate reports whether s starts like an ISO date, 2025-11-09.
func isDate(s string) bool {
	if len(s) < 10 {
		return false
	}
	for i := 0; i < 10; i++ {
		c := s[i]
		if i == 4 || i == 7 {
			if c != '-' {
				return false
			}
		} else if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// StepStatus is a workflow step's state.
type StepStatus string

// The step states of the protocol's workflow.updated.
const (
	StepCompleted  StepStatus = "completed"
	StepInProgress StepStatus = "in_progress"
	StepPending    StepStatus = "pending"
)

// Step is one step of a workflow.
type Step struct {
	// Name identifies the step, e.g. "prd" or "1-2-some-story".
	Name   string
	Status StepStatus
	// DisplayName is a human-readable name, when the file gives one.
	DisplayName string
}

// Workflow is a workflow's progress.
type Workflow struct {
	// CurrentStep is the first step in progress, else the first pending
	// one, else empty.
	CurrentStep    string
	CompletedSteps []string
	Steps          []Step
}
