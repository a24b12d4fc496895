package wire

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/sessions"
)

// protocolDoc is the protocol's document, whose tables TestDocTables
// holds to the Go definitions.
const protocolDoc = "../docs/protocol.md"

// docTable is one markdown table of the document, under its heading.
type docTable struct {
	section string // the "## " heading above it
	heading string // the nearest heading above it, of any level
	header  []string
	rows    [][]string
	line    int
}

// docTables returns the tables of a markdown document.
func docTables(doc string) []docTable {
	var tables []docTable
	var section, heading string
	var cur *docTable
	for i, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(line, "|") {
			cur = nil
			if h, ok := strings.CutPrefix(line, "## "); ok {
				section, heading = h, h
			} else if strings.HasPrefix(line, "#") {
				heading = strings.TrimSpace(strings.TrimLeft(line, "#"))
			}
			continue
		}
		cells := splitRow(line)
		switch {
		case cur == nil:
			tables = append(tables, docTable{section: section, heading: heading, header: cells, line: i + 1})
			cur = &tables[len(tables)-1]
		case strings.HasPrefix(cells[0], "---"):
		default:
			cur.rows = append(cur.rows, cells)
		}
	}
	return tables
}

// splitRow returns the cells of a table row, split at each pipe that is
// not escaped.
func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	var cells []string
	start := 0
	for i := 0; i < len(line); i++ {
		if line[i] == '|' && (i == 0 || line[i-1] != '\\') {
			cells = append(cells, strings.TrimSpace(line[start:i]))
			start = i + 1
		}
	}
	return append(cells, strings.TrimSpace(line[start:]))
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

// names returns the code spans of a table cell: "`cols`, `rows`" is
// cols and rows.
func names(cell string) []string {
	var ns []string
	for _, m := range codeSpan.FindAllStringSubmatch(cell, -1) {
		ns = append(ns, m[1])
	}
	return ns
}

// TestDocTables: docs/protocol.md's tables name every message type of
// each direction, and for each the fields the Go side has, required and
// optional alike, in the same order, and no others; the tables of a
// message's fields, of the Session JSON and of a Permission name only
// fields that exist, optional where they say so.
func TestDocTables(t *testing.T) {
	doc, err := os.ReadFile(protocolDoc)
	if err != nil {
		t.Fatal(err)
	}
	tables := docTables(string(doc))
	find := func(section string, header ...string) docTable {
		t.Helper()
		for _, tb := range tables {
			if strings.HasPrefix(tb.section, section) && slices.Equal(tb.header, header) {
				return tb
			}
		}
		t.Fatalf("%s has no table %v in section %q", protocolDoc, header, section)
		return docTable{}
	}

	fieldsOf := func(typ string, client bool) (req, opt []string) {
		fs, _ := messageFields(t, typ, client)
		for _, f := range fs {
			if f.optional {
				opt = append(opt, f.name)
			} else {
				req = append(req, f.name)
			}
		}
		return req, opt
	}
	for _, side := range []struct {
		section string
		client  bool
		want    []string
	}{
		{"2. Client to server", true, mapKeys(ClientFields)},
		{"3. Server to client", false, mapKeys(serverMessages)},
	} {
		header := []string{"type", "required fields", "optional fields"}
		if side.client {
			header = append(header, "reply on success")
		}
		tb := find(side.section, header...)
		var listed []string
		for _, row := range tb.rows {
			typ := strings.Join(names(row[0]), " ")
			listed = append(listed, typ)
			if !slices.Contains(side.want, typ) {
				t.Errorf("%s:%d: %s is no %s message the Go side knows", protocolDoc, tb.line, typ, side.section)
				continue
			}
			req, opt := fieldsOf(typ, side.client)
			if got := names(row[1]); !slices.Equal(got, req) {
				t.Errorf("%s: %s's required fields are %v, the Go side's %v", protocolDoc, typ, got, req)
			}
			if got := names(row[2]); !slices.Equal(got, opt) {
				t.Errorf("%s: %s's optional fields are %v, the Go side's %v", protocolDoc, typ, got, opt)
			}
		}
		for _, typ := range side.want {
			if !slices.Contains(listed, typ) {
				t.Errorf("%s: section %q's table lacks %s", protocolDoc, side.section, typ)
			}
		}
	}

	// The list of what is sent when names the same server messages.
	var sent []string
	for _, row := range find("3. Server to client", "type", "sent to", "when").rows {
		sent = append(sent, names(row[0])...)
	}
	slices.Sort(sent)
	if want := mapKeys(serverMessages); !slices.Equal(sent, want) {
		t.Errorf("%s: section 3's table of who gets what lists %v, want %v", protocolDoc, sent, want)
	}

	// Tables of one message's fields, and of the objects in them.
	objects := map[string]reflect.Type{
		"Session JSON": reflect.TypeFor[Session](),
		"Permission":   reflect.TypeFor[sessions.Permission](),
	}
	checked := map[string]bool{}
	for _, tb := range tables {
		if !slices.Equal(tb.header, []string{"field", "type", "meaning"}) {
			continue
		}
		var fs []goField
		whole := false // the table lists every field, not just those it explains
		if st, ok := objects[tb.heading]; ok {
			fs = structFields(t, st)
			whole = true
		} else if msg, ok := serverMessages[tb.heading]; ok {
			fs = structFields(t, reflect.TypeOf(msg))
		} else {
			continue
		}
		checked[tb.heading] = true
		byName := map[string]goField{}
		for _, f := range fs {
			if f.name != "type" {
				byName[f.name] = f
			}
		}
		seen := map[string]bool{}
		for _, row := range tb.rows {
			for _, n := range names(row[0]) {
				f, ok := byName[n]
				switch {
				case !ok:
					t.Errorf("%s:%d: %s's table has field %s, which the Go side lacks", protocolDoc, tb.line, tb.heading, n)
				case seen[n]:
					t.Errorf("%s:%d: %s's table has field %s twice", protocolDoc, tb.line, tb.heading, n)
				case strings.Contains(row[1], "optional") && !f.optional:
					t.Errorf("%s:%d: %s's table says %s is optional; the Go side always sends it", protocolDoc, tb.line, tb.heading, n)
				}
				seen[n] = true
			}
		}
		for n := range byName {
			if whole && !seen[n] {
				t.Errorf("%s:%d: %s's table lacks field %s", protocolDoc, tb.line, tb.heading, n)
			}
		}
	}
	for name := range objects {
		if !checked[name] {
			t.Errorf("%s has no field table under %q", protocolDoc, name)
		}
	}
}
