package wire

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// uiTypesPath is the UI's copy of the protocol's types, which
// TestUITypes holds to the Go definitions.
const uiTypesPath = "../web/src/shared/types.ts"

// serverMessages is every server-to-client message type with the struct
// it is sent as. TestMessageList keeps it complete.
var serverMessages = map[string]any{
	TypeTerminalOutput:      OutputMessage{},
	TypeTerminalExit:        ExitMessage{},
	TypeSessionAttached:     AttachedMessage{},
	TypeSessionCreated:      CreatedMessage{},
	TypeSessionStatus:       StatusMessage{},
	TypeSessionDestroyed:    DestroyedMessage{},
	TypeSessionNeedsInput:   NeedsInputMessage{},
	TypeSessionWarning:      WarningMessage{},
	TypeSessionDiff:         DiffMessage{},
	TypeSessionBranch:       BranchMessage{},
	TypePortsChanged:        PortsMessage{},
	TypeOverlapsChanged:     OverlapsMessage{},
	TypeSessionCheckpoint:   CheckpointMessage{},
	TypeSessionCheck:        CheckMessage{},
	TypeSessionSetup:        SetupMessage{},
	TypeSessionResized:      ResizedMessage{},
	TypeAgentCall:           AgentCallMessage{},
	TypeUsageUpdated:        UsageMessage{},
	TypeSessionContinued:    ContinuedMessage{},
	TypeSessionAnswered:     AnsweredMessage{},
	TypeShareWelcome:        ShareWelcomeMessage{},
	TypeSessionPullRequest:  PullRequestMessage{},
	TypeClientWelcome:       WelcomeMessage{},
	TypeSessionParticipants: ParticipantsMessage{},
	TypePromptQueued:        PromptQueuedMessage{},
	TypePromptQueuedAck:     PromptAckMessage{},
	TypePromptDelivered:     PromptGoneMessage{},
	TypePromptDequeued:      PromptGoneMessage{},
	TypePromptList:          PromptListMessage{},
	TypeReviewDraft:         ReviewDraftMessage{},
	TypeFileChanged:         FileChangedMessage{},
	TypeFileRecent:          FileRecentMessage{},
	TypeLayoutShift:         LayoutShiftMessage{},
	TypeWorkflowUpdated:     WorkflowMessage{},
	TypeResourceWarning:     ResourceWarningMessage{},
	TypeSaveStatus:          SaveStatusMessage{},
	TypeServerShutdown:      ShutdownMessage{},
	TypeError:               ErrorMessage{},
	TypeHeartbeat:           HeartbeatMessage{},
}

// readsAbsent lists the fields the server always sends that the UI's
// types still declare optional, each with the reason: the UI reads
// their absence (from a server older than the page) on purpose. A field
// listed here that types.ts makes required fails the test, so the list
// only shrinks.
var readsAbsent = map[string]string{
	"session.created.session.running": "web/src/store.ts derives running from the status when a server does not say (runningAfter)",
	"session.status.running":          "likewise",
}

// goField is one field of a message as the Go side sends or takes it.
type goField struct {
	name     string // its JSON name
	optional bool   // may be left out
	typ      reflect.Type
}

// jsonFields returns the JSON fields of struct type st: a field is
// optional when it is omitted empty. problems says what the tests cannot
// read.
func jsonFields(st reflect.Type) (fs []goField, problems []string) {
	for i := range st.NumField() {
		f := st.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" || f.Anonymous {
			problems = append(problems, st.String()+"."+f.Name+" has no JSON name; the protocol's tests read only named fields")
			continue
		}
		optional := opts == "omitempty"
		if f.Type.Kind() == reflect.Pointer && !optional && st != reflect.TypeFor[ClientMessage]() {
			problems = append(problems, st.String()+"."+f.Name+" is a pointer sent as null when nil; the protocol has no nulls")
		}
		fs = append(fs, goField{name: name, optional: optional, typ: f.Type})
	}
	return fs, problems
}

// structFields returns jsonFields of st, failing t on a problem.
func structFields(t *testing.T, st reflect.Type) []goField {
	t.Helper()
	fs, problems := jsonFields(st)
	for _, p := range problems {
		t.Error(p)
	}
	return fs
}

// messageFields returns the fields of message type typ, "type" left
// out, and the Go definition they come from.
func messageFields(t *testing.T, typ string, client bool) (fs []goField, from string) {
	t.Helper()
	if client {
		cm := reflect.TypeFor[ClientMessage]()
		byName := map[string]reflect.Type{}
		for _, f := range structFields(t, cm) {
			if f.name != "type" {
				byName[f.name] = f.typ.Elem()
			}
		}
		add := func(names []string, optional bool) {
			for _, n := range names {
				ft, ok := byName[n]
				if !ok {
					t.Fatalf("ClientFields[%s] names %s, which ClientMessage lacks", typ, n)
				}
				fs = append(fs, goField{name: n, optional: optional, typ: ft})
			}
		}
		add(ClientFields[typ].Required, false)
		add(ClientFields[typ].Optional, true)
		return fs, "wire.ClientFields[" + typ + "]"
	}
	st := reflect.TypeOf(serverMessages[typ])
	for _, f := range structFields(t, st) {
		if f.name != "type" {
			fs = append(fs, f)
		}
	}
	return fs, st.String()
}

// TestMessageList: every message type declared in wire.go is a client
// message (ClientFields), a server message (serverMessages) or both, and
// every message struct is some type's; so the checks below cover the
// whole protocol.
func TestMessageList(t *testing.T) {
	declared := stringConstants(t, "wire.go", "Type")
	for name, value := range declared {
		_, client := ClientFields[value]
		_, server := serverMessages[value]
		if !client && !server {
			t.Errorf("%s (%q) is in neither ClientFields nor this test's serverMessages", name, value)
		}
	}
	values := map[string]bool{}
	for _, v := range declared {
		values[v] = true
	}
	for typ := range ClientFields {
		if !values[typ] {
			t.Errorf("ClientFields has %q, which no Type constant declares", typ)
		}
	}
	used := map[string]bool{}
	for typ, msg := range serverMessages {
		if !values[typ] {
			t.Errorf("serverMessages has %q, which no Type constant declares", typ)
		}
		st := reflect.TypeOf(msg)
		used[st.Name()] = true
		if f, ok := st.FieldByName("Type"); !ok || f.Index[0] != 0 || f.Tag.Get("json") != "type" {
			t.Errorf("%s does not start with its type", st)
		}
	}
	for _, name := range messageStructs(t) {
		if !used[name] {
			t.Errorf("%s is sent as no message type in serverMessages", name)
		}
	}
}

// stringConstants returns the constants of file (in this package) whose
// names start with prefix, by name, with their values.
func stringConstants(t *testing.T, file, prefix string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if !strings.HasPrefix(n.Name, prefix) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("%s: %s is not a string literal", file, n.Name)
				}
				v, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				consts[n.Name] = v
			}
		}
	}
	return consts
}

// messageStructs returns the names of the types of messages.go that end
// in Message.
func messageStructs(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "messages.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	ast.Inspect(f, func(n ast.Node) bool {
		if ts, ok := n.(*ast.TypeSpec); ok && strings.HasSuffix(ts.Name.Name, "Message") {
			names = append(names, ts.Name.Name)
		}
		return true
	})
	return names
}

// TestUITypes: the UI's ClientMessage and ServerMessage unions in
// types.ts name every message type of the protocol, and each member has
// the Go definition's fields, by JSON name, optional exactly where the Go
// side may leave one out, of matching types (strings, string literals,
// numbers, booleans, arrays, objects with the same rules) all the way
// down.
func TestUITypes(t *testing.T) {
	src, err := os.ReadFile(uiTypesPath)
	if err != nil {
		t.Fatal(err)
	}
	decls, err := tsDecls(string(src))
	if err != nil {
		t.Fatal(err)
	}
	c := &tsCheck{decls: decls, lenient: map[string]bool{}}
	for _, side := range []struct {
		union  string
		client bool
		want   []string
	}{
		{"ClientMessage", true, mapKeys(ClientFields)},
		{"ServerMessage", false, mapKeys(serverMessages)},
	} {
		got := c.messages(side.union)
		for _, typ := range side.want {
			obj, ok := got[typ]
			if !ok {
				c.errorf("%s: %s is missing from types.ts's %s", typ, typ, side.union)
				continue
			}
			fs, from := messageFields(t, typ, side.client)
			c.path = typ
			c.fields(typ+" ("+from+")", fs, obj)
		}
		for typ := range got {
			if !slices.Contains(side.want, typ) {
				c.errorf("%s: types.ts's %s has it; the Go side does not send it that way", typ, side.union)
			}
		}
	}
	for path := range readsAbsent {
		if !c.lenient[path] {
			c.errorf("readsAbsent lists %s, which no message has", path)
		}
	}
	sort.Strings(c.errs)
	for _, e := range c.errs {
		t.Error(e)
	}
}

func mapKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// tsCheck compares Go types with the declarations of types.ts,
// collecting every difference.
type tsCheck struct {
	decls map[string]tsType
	errs  []string
	// path names the field being compared, from its message type:
	// "session.created.session.running".
	path string
	// lenient holds the readsAbsent entries met.
	lenient map[string]bool
}

func optionality(optional bool) string {
	if optional {
		return "optional"
	}
	return "required"
}

func (c *tsCheck) errorf(format string, args ...any) {
	c.errs = append(c.errs, fmt.Sprintf(format, args...))
}

// messages returns the members of the union alias name by the message
// type their "type" field says.
func (c *tsCheck) messages(name string) map[string]tsType {
	byType := map[string]tsType{}
	u := c.resolve(tsType{kind: "ref", name: name})
	members := []tsType{u}
	if u.kind == "union" {
		members = u.args
	}
	for _, m := range members {
		obj := c.resolve(m)
		var typeField *tsField
		for i := range obj.fields {
			if obj.fields[i].name == "type" {
				typeField = &obj.fields[i]
			}
		}
		if obj.kind != "object" || typeField == nil {
			c.errorf("types.ts:%d: a member of %s that is not an object with a type", m.line, name)
			continue
		}
		for _, lit := range c.literals(typeField.typ) {
			if _, dup := byType[lit]; dup {
				c.errorf("types.ts:%d: %s is in %s twice", m.line, lit, name)
			}
			byType[lit] = obj
		}
	}
	return byType
}

// literals returns the string literals t stands for, or reports that it
// is not a union of them.
func (c *tsCheck) literals(t tsType) []string {
	t = c.resolve(t)
	switch t.kind {
	case "literal":
		return []string{t.name}
	case "union":
		var lits []string
		for _, m := range t.args {
			lits = append(lits, c.literals(m)...)
		}
		return lits
	}
	c.errorf("types.ts:%d: a message's type is not a string literal", t.line)
	return nil
}

// resolve follows references to the type they name, applies Omit, and
// merges an interface's bases into its fields.
func (c *tsCheck) resolve(t tsType) tsType {
	for t.kind == "ref" {
		if t.name == "Omit" && len(t.args) == 2 {
			base := c.resolve(t.args[0])
			drop := c.literals(t.args[1])
			out := tsType{kind: "object", line: t.line}
			for _, f := range base.fields {
				if !slices.Contains(drop, f.name) {
					out.fields = append(out.fields, f)
				}
			}
			return out
		}
		d, ok := c.decls[t.name]
		if !ok || len(t.args) > 0 {
			c.errorf("types.ts:%d: %s is not a type declared in the file", t.line, t.name)
			return tsType{kind: "unknown", line: t.line}
		}
		t = d
	}
	if t.kind == "object" && len(t.extends) > 0 {
		own := map[string]bool{}
		for _, f := range t.fields {
			own[f.name] = true
		}
		merged := tsType{kind: "object", line: t.line, fields: slices.Clone(t.fields)}
		for _, b := range t.extends {
			for _, f := range c.resolve(b).fields {
				if !own[f.name] {
					merged.fields = append(merged.fields, f)
				}
			}
		}
		return merged
	}
	return t
}

// fields compares a message or object's Go fields with the TypeScript
// object ts; "type" is the message's own business.
func (c *tsCheck) fields(where string, gfs []goField, ts tsType) {
	ts = c.resolve(ts)
	if ts.kind != "object" {
		c.errorf("%s: types.ts:%d has no object for it", where, ts.line)
		return
	}
	byName := map[string]tsField{}
	for _, f := range ts.fields {
		if f.name != "type" {
			byName[f.name] = f
		}
	}
	for _, g := range gfs {
		f, ok := byName[g.name]
		if !ok {
			c.errorf("%s: field %s is missing from types.ts:%d", where, g.name, ts.line)
			continue
		}
		delete(byName, g.name)
		path := c.path + "." + g.name
		if _, lenient := readsAbsent[path]; lenient {
			c.lenient[path] = true
			if g.optional || !f.optional {
				c.errorf("%s: field %s is listed in readsAbsent but is no longer a required field the UI declares optional: take it off the list", where, g.name)
			}
		} else if f.optional != g.optional {
			c.errorf("%s: field %s is %s in types.ts:%d but %s on the Go side", where, g.name, optionality(f.optional), f.line, optionality(g.optional))
		}
		outer := c.path
		c.path = path
		c.typ(where+"."+g.name, g.typ, f.typ)
		c.path = outer
	}
	for name, f := range byName {
		c.errorf("%s: types.ts:%d has field %s, which the Go side lacks", where, f.line, name)
	}
}

var timeType = reflect.TypeFor[time.Time]()

// typ compares the Go type g with the TypeScript type ts.
func (c *tsCheck) typ(where string, g reflect.Type, ts tsType) {
	if g.Kind() == reflect.Pointer {
		g = g.Elem()
	}
	r := c.resolve(ts)
	want := func(kw string) {
		if r.kind != "keyword" || r.name != kw {
			c.errorf("%s: types.ts:%d says %s, Go %s: want %s", where, ts.line, tsString(r), g, kw)
		}
	}
	switch {
	case g == timeType:
		want("string") // RFC 3339, as encoding/json writes a time
	case g.Kind() == reflect.String:
		if r.kind == "keyword" && r.name == "string" || r.kind == "literal" {
			return
		}
		if r.kind == "union" {
			for _, m := range r.args {
				if m := c.resolve(m); m.kind != "literal" {
					c.errorf("%s: types.ts:%d: a union of %s, Go a string: want string literals", where, ts.line, tsString(m))
					return
				}
			}
			return
		}
		want("string")
	case g.Kind() == reflect.Bool:
		want("boolean")
	case g.Kind() >= reflect.Int && g.Kind() <= reflect.Float64:
		want("number")
	case g.Kind() == reflect.Slice:
		if r.kind != "array" {
			c.errorf("%s: types.ts:%d says %s, Go %s: want an array", where, ts.line, tsString(r), g)
			return
		}
		c.typ(where+"[]", g.Elem(), *r.elem)
	case g.Kind() == reflect.Struct:
		fs, problems := jsonFields(g)
		for _, p := range problems {
			c.errorf("%s: %s", where, p)
		}
		c.fields(where+" ("+g.String()+")", fs, ts)
	default:
		c.errorf("%s: Go type %s has no rule here; teach TestUITypes it", where, g)
	}
}

func tsString(t tsType) string {
	switch t.kind {
	case "keyword", "ref":
		return t.name
	case "literal":
		return "'" + t.name + "'"
	}
	return t.kind
}
