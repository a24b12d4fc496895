package wire

import (
	"fmt"
	"strings"
	"unicode"
)

// A small, strict parser of the TypeScript that web/src/shared/types.ts is
// written in: exported interfaces (with extends) and type aliases whose
// types are keywords, string literals, references with type arguments,
// object literals, arrays and unions. Anything else is an error that
// names its line, so a new construct in the file fails the test that
// reads it instead of being skipped.

// tsType is one TypeScript type expression.
type tsType struct {
	kind    string   // "keyword", "literal", "ref", "object", "array", "union"
	name    string   // keyword or reference name; literal value
	args    []tsType // a reference's type arguments; a union's members
	elem    *tsType  // an array's element type
	fields  []tsField
	extends []tsType // an interface's bases
	line    int
}

// tsField is one property of an object type.
type tsField struct {
	name     string
	optional bool
	typ      tsType
	line     int
}

type tsToken struct {
	text string // punctuation, identifier, or a string literal with its quotes
	line int
}

// tsDecls parses src and returns its declarations by name.
func tsDecls(src string) (decls map[string]tsType, err error) {
	toks, err := tsTokens(src)
	if err != nil {
		return nil, err
	}
	p := &tsParser{toks: toks}
	defer func() {
		if r := recover(); r != nil {
			pe, ok := r.(tsError)
			if !ok {
				panic(r)
			}
			err = pe
		}
	}()
	decls = map[string]tsType{}
	for !p.done() {
		p.accept("export")
		line := p.peek().line
		var name string
		var t tsType
		switch p.next().text {
		case "interface":
			name = p.ident()
			t = tsType{kind: "object", line: line}
			if p.accept("extends") {
				t.extends = append(t.extends, p.typ())
				for p.accept(",") {
					t.extends = append(t.extends, p.typ())
				}
			}
			p.expect("{")
			t.fields = p.members()
		case "type":
			name = p.ident()
			p.expect("=")
			t = p.typ()
			p.expect(";")
		default:
			p.fail(line, "want an interface or a type alias")
		}
		if _, dup := decls[name]; dup {
			p.fail(line, "%s is declared twice", name)
		}
		decls[name] = t
	}
	return decls, nil
}

type tsError string

func (e tsError) Error() string { return string(e) }

type tsParser struct {
	toks []tsToken
	pos  int
}

func (p *tsParser) fail(line int, format string, args ...any) {
	panic(tsError(fmt.Sprintf("types.ts:%d: %s", line, fmt.Sprintf(format, args...))))
}

func (p *tsParser) done() bool { return p.pos == len(p.toks) }

func (p *tsParser) peek() tsToken {
	if p.done() {
		line := 0
		if len(p.toks) > 0 {
			line = p.toks[len(p.toks)-1].line
		}
		p.fail(line, "unexpected end of file")
	}
	return p.toks[p.pos]
}

func (p *tsParser) next() tsToken {
	t := p.peek()
	p.pos++
	return t
}

func (p *tsParser) accept(text string) bool {
	if !p.done() && p.toks[p.pos].text == text {
		p.pos++
		return true
	}
	return false
}

func (p *tsParser) expect(text string) {
	if t := p.next(); t.text != text {
		p.fail(t.line, "want %q, found %q", text, t.text)
	}
}

func (p *tsParser) ident() string {
	t := p.next()
	if !isTSIdent(t.text) {
		p.fail(t.line, "want a name, found %q", t.text)
	}
	return t.text
}

// members parses an object type's properties up to its closing brace.
func (p *tsParser) members() []tsField {
	var fs []tsField
	for !p.accept("}") {
		line := p.peek().line
		name := p.next()
		if !isTSIdent(name.text) && !isTSKeyword(name.text) {
			p.fail(name.line, "want a property name, found %q", name.text)
		}
		f := tsField{name: name.text, line: line}
		f.optional = p.accept("?")
		p.expect(":")
		f.typ = p.typ()
		if !p.accept(";") && !p.accept(",") && p.peek().text != "}" {
			p.fail(p.peek().line, "want ';' after %s, found %q", f.name, p.peek().text)
		}
		fs = append(fs, f)
	}
	return fs
}

// typ parses a union of array-suffixed primary types.
func (p *tsParser) typ() tsType {
	line := p.peek().line
	p.accept("|") // a leading bar, as a union written one member a line has
	members := []tsType{p.postfix()}
	for p.accept("|") {
		members = append(members, p.postfix())
	}
	if len(members) == 1 {
		return members[0]
	}
	return tsType{kind: "union", args: members, line: line}
}

func (p *tsParser) postfix() tsType {
	t := p.primary()
	for p.accept("[") {
		p.expect("]")
		elem := t
		t = tsType{kind: "array", elem: &elem, line: t.line}
	}
	return t
}

func (p *tsParser) primary() tsType {
	tok := p.next()
	switch {
	case tok.text == "{":
		return tsType{kind: "object", fields: p.members(), line: tok.line}
	case tok.text == "(":
		t := p.typ()
		p.expect(")")
		return t
	case strings.HasPrefix(tok.text, "'"):
		return tsType{kind: "literal", name: strings.Trim(tok.text, "'"), line: tok.line}
	case tok.text == "string" || tok.text == "number" || tok.text == "boolean" || tok.text == "null":
		return tsType{kind: "keyword", name: tok.text, line: tok.line}
	case isTSIdent(tok.text):
		t := tsType{kind: "ref", name: tok.text, line: tok.line}
		if p.accept("<") {
			t.args = append(t.args, p.typ())
			for p.accept(",") {
				t.args = append(t.args, p.typ())
			}
			p.expect(">")
		}
		return t
	}
	p.fail(tok.line, "want a type, found %q", tok.text)
	return tsType{}
}

// isTSKeyword reports whether s is one of the words the parser knows,
// which name no type but may name a property.
func isTSKeyword(s string) bool {
	switch s {
	case "export", "interface", "type", "extends", "string", "number", "boolean", "null":
		return true
	}
	return false
}

// isTSIdent reports whether s is a name other than the keywords the
// parser knows.
func isTSIdent(s string) bool {
	if s == "" || isTSKeyword(s) {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r == '$' || unicode.IsLetter(r) || i > 0 && unicode.IsDigit(r)) {
			return false
		}
	}
	return true
}

// tsTokens splits src into tokens, dropping comments; a character the
// subset does not use is an error.
func tsTokens(src string) ([]tsToken, error) {
	var toks []tsToken
	line := 1
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case strings.HasPrefix(src[i:], "//"):
			n := strings.IndexByte(src[i:], '\n')
			if n < 0 {
				n = len(src) - i
			}
			i += n
		case strings.HasPrefix(src[i:], "/*"):
			n := strings.Index(src[i+2:], "*/")
			if n < 0 {
				return nil, fmt.Errorf("types.ts:%d: unterminated comment", line)
			}
			line += strings.Count(src[i:i+2+n], "\n")
			i += n + 4
		case c == '\'':
			n := strings.IndexAny(src[i+1:], "'\n\\")
			if n < 0 || src[i+1+n] != '\'' {
				return nil, fmt.Errorf("types.ts:%d: a string literal the parser cannot read", line)
			}
			toks = append(toks, tsToken{src[i : i+n+2], line})
			i += n + 2
		case strings.IndexByte("{}()<>[];:?|,=", c) >= 0:
			toks = append(toks, tsToken{string(c), line})
			i++
		case c == '_' || c == '$' || c < 0x80 && unicode.IsLetter(rune(c)):
			j := i + 1
			for j < len(src) && (src[j] == '_' || src[j] == '$' || src[j] < 0x80 && (unicode.IsLetter(rune(src[j])) || unicode.IsDigit(rune(src[j])))) {
				j++
			}
			toks = append(toks, tsToken{src[i:j], line})
			i = j
		default:
			return nil, fmt.Errorf("types.ts:%d: unexpected character %q", line, c)
		}
	}
	return toks, nil
}
