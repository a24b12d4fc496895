package githubtest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/forge/githubtest"
)

// The stand-in's answers against GitHub's own documentation in testdata
// (README.md there names its source): the example body of each operation
// and the schema of its answer. Each field the stand-in gives has the
// example's name and JSON type or, where the example does not show it,
// the schema's (it may leave out fields package forge never reads); each
// field forge reads is in both the answer and the example, with one type.

// shapeCase is one call forge makes and the documented example of its
// answer.
type shapeCase struct {
	op      string // operationId
	docs    string // the docs page the handler follows
	method  string
	path    string
	status  int
	example string // file in testdata
	// reads are the key paths forge decodes ("a.b", "[]" for each element
	// of an array); each must be in the stand-in's answer and in the
	// example, not null in both, with the same JSON type.
	reads []string
}

func TestShapesFollowDocumentedExamples(t *testing.T) {
	d := loadDocs(t)
	s := githubtest.New(t)
	s.AddRepo("octocat", "Hello-World", "main")

	// Two pull requests: #1 open (reviewed, with checks and statuses on
	// its head), #2 merged, so that merged_at has a value to compare.
	var created any
	for i, head := range []string{"new-topic", "old-topic"} {
		code, body := call(t, s, "POST", "/repos/octocat/Hello-World/pulls",
			fmt.Sprintf(`{"title":"Amazing new feature %d","head":%q,"base":"main","body":"Please pull these awesome changes in!"}`, i, head))
		if code != http.StatusCreated {
			t.Fatalf("create pull request %s: %d %s", head, code, body)
		}
		if i == 0 {
			created = decode(t, body)
		}
	}
	if err := s.SetPullState("octocat", "Hello-World", 2, "merged"); err != nil {
		t.Fatal(err)
	}
	if err := s.AddReview("octocat", "Hello-World", 1, githubtest.Review{User: "octocat", State: "APPROVED", Body: "Here is the body for the review."}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetChecks("octocat", "Hello-World", "pull/1", []githubtest.CheckRun{{
		Name: "mighty_readme", Conclusion: "neutral", DetailsURL: "https://example.com",
		Title: "Mighty Readme report", Summary: "There are 0 failures, 2 warnings, and 1 notice.", Text: "You may have some misspelled words.",
	}, {Name: "build", Conclusion: "failure", Title: "1 failed", Summary: "TestX failed", Text: "--- FAIL: TestX"},
		{Name: "deploy", Status: "in_progress"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetStatuses("octocat", "Hello-World", "pull/1", []githubtest.Status{
		{State: "success", Context: "continuous-integration/jenkins", TargetURL: "https://ci.example.com/1000/output", Description: "Build has completed successfully"},
		{State: "failure", Context: "security/brakeman", TargetURL: "https://ci.example.com/2000/output", Description: "Testing failed"},
	}); err != nil {
		t.Fatal(err)
	}
	sha := s.HeadSHA("octocat", "Hello-World", 1)

	pullReads := []string{"number", "html_url", "state", "title", "draft", "head.ref", "head.sha", "base.ref"}
	cases := []shapeCase{{
		op: "pulls/list", docs: "https://docs.github.com/rest/pulls/pulls#list-pull-requests",
		method: "GET", path: "/repos/octocat/Hello-World/pulls?state=all", status: 200, example: "pulls-list.json",
		reads: append(prefix("[].", pullReads), "[].merged_at"),
	}, {
		op: "pulls/get", docs: "https://docs.github.com/rest/pulls/pulls#get-a-pull-request",
		method: "GET", path: "/repos/octocat/Hello-World/pulls/2", status: 200, example: "pulls-get.json",
		reads: append(pullReads, "merged", "merged_at"),
	}, {
		// The open one too: merged false, merged_at null.
		op: "pulls/get", docs: "https://docs.github.com/rest/pulls/pulls#get-a-pull-request",
		method: "GET", path: "/repos/octocat/Hello-World/pulls/1", status: 200, example: "pulls-get.json",
		reads: append(pullReads, "merged"),
	}, {
		op: "pulls/list-reviews", docs: "https://docs.github.com/rest/pulls/reviews#list-reviews-for-a-pull-request",
		method: "GET", path: "/repos/octocat/Hello-World/pulls/1/reviews", status: 200, example: "pulls-list-reviews.json",
		reads: []string{"[].user.login", "[].state", "[].submitted_at"},
	}, {
		op: "checks/list-for-ref", docs: "https://docs.github.com/rest/checks/runs#list-check-runs-for-a-git-reference",
		method: "GET", path: "/repos/octocat/Hello-World/commits/" + sha + "/check-runs?filter=latest&per_page=100", status: 200, example: "checks-list-for-ref.json",
		reads: prefix("check_runs[].", []string{"id", "name", "status", "conclusion", "html_url", "details_url", "app.slug", "output.title", "output.summary", "output.text"}),
	}, {
		op: "repos/get-combined-status-for-ref", docs: "https://docs.github.com/rest/commits/statuses#get-the-combined-status-for-a-specific-reference",
		method: "GET", path: "/repos/octocat/Hello-World/commits/" + sha + "/status?per_page=100", status: 200, example: "repos-get-combined-status-for-ref.json",
		reads: prefix("statuses[].", []string{"state", "context", "target_url", "description"}),
	}, {
		op: "repos/get", docs: "https://docs.github.com/rest/repos/repos#get-a-repository",
		method: "GET", path: "/repos/octocat/Hello-World", status: 200, example: "repos-get.json",
		reads: []string{"default_branch"},
	}}
	for _, c := range cases {
		t.Run(c.op+" "+c.path, func(t *testing.T) {
			code, body := call(t, s, c.method, c.path, "")
			if code != c.status {
				t.Fatalf("%s %s: %d, want %d: %s", c.method, c.path, code, c.status, body)
			}
			checkShape(t, d, decode(t, body), example(t, c.example), d.operation(t, c.op), c.reads)
		})
	}
	// pulls/create follows https://docs.github.com/rest/pulls/pulls#create-a-pull-request.
	t.Run("pulls/create", func(t *testing.T) {
		checkShape(t, d, created, example(t, "pulls-create.json"), d.operation(t, "pulls/create"), pullReads)
	})
}

// TestErrorShapesFollowDocs holds the stand-in's error bodies to the
// description's schemas (basic-error; validation-error for 422) and to
// the docs' example bodies, whose read fields must be in both: 422
// https://docs.github.com/rest/using-the-rest-api/troubleshooting-the-rest-api#validation-failed,
// 403 https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api#exceeding-the-rate-limit.
// The docs' 422 example is partial (no documentation_url, no status; an
// error with field and no message, where a custom one has message and no
// field), so there only the read fields are held to it.
func TestErrorShapesFollowDocs(t *testing.T) {
	d := loadDocs(t)
	s := githubtest.New(t)
	s.AddRepo("octocat", "Hello-World", "main")
	errorReads := []string{"message", "documentation_url"}
	failed := example(t, "validation-failed.json")

	// A missing field: errors[].field.
	code, body := call(t, s, "POST", "/repos/octocat/Hello-World/pulls", `{"head":"new-topic","base":"main"}`)
	if code != http.StatusUnprocessableEntity {
		t.Fatalf("create without a title: %d %s", code, body)
	}
	missing := decode(t, body)
	checkShape(t, d, missing, nil, d.errorSchema(t, "validation_failed"), nil)
	checkReads(t, missing, failed, []string{"message", "errors[].resource", "errors[].field", "errors[].code"})
	checkPresent(t, missing, errorReads)

	// A custom one: errors[].message.
	for range 2 {
		code, body = call(t, s, "POST", "/repos/octocat/Hello-World/pulls", `{"title":"t","head":"new-topic","base":"main"}`)
	}
	if code != http.StatusUnprocessableEntity {
		t.Fatalf("a second pull request of one head: %d %s", code, body)
	}
	custom := decode(t, body)
	checkShape(t, d, custom, nil, d.errorSchema(t, "validation_failed"), nil)
	checkReads(t, custom, failed, []string{"message", "errors[].resource", "errors[].code"})
	checkPresent(t, custom, append(errorReads, "errors[].message"))

	// Not found, and bad credentials: basic-error.
	code, body = call(t, s, "GET", "/repos/octocat/nothing", "")
	if code != http.StatusNotFound {
		t.Fatalf("unknown repository: %d %s", code, body)
	}
	checkShape(t, d, decode(t, body), nil, d.errorSchema(t, "not_found"), nil)
	checkPresent(t, decode(t, body), errorReads)
	req, _ := http.NewRequest("GET", s.URL+"/repos/octocat/Hello-World", nil)
	req.Header.Set("Authorization", "Bearer wrong")
	code, body = do(t, req)
	if code != http.StatusUnauthorized {
		t.Fatalf("bad token: %d %s", code, body)
	}
	checkShape(t, d, decode(t, body), nil, d.errorSchema(t, "requires_authentication"), nil)
	checkPresent(t, decode(t, body), errorReads)

	// The primary rate limit spent: 403 with the documented body.
	s.ExhaustRateLimit(time.Hour)
	code, body = call(t, s, "GET", "/repos/octocat/Hello-World", "")
	if code != http.StatusForbidden {
		t.Fatalf("rate limit spent: %d %s", code, body)
	}
	limited := decode(t, body)
	checkShape(t, d, limited, example(t, "rate-limit-exceeded.json"), d.errorSchema(t, "forbidden"), errorReads)
	if msg, _ := limited.(map[string]any)["message"].(string); !strings.HasPrefix(msg, "API rate limit exceeded for ") {
		t.Errorf("rate limit message %q does not begin as the docs' does", msg)
	}
}

// checkPresent fails t for each path with no value (or only null) in got.
func checkPresent(t *testing.T, got any, paths []string) {
	t.Helper()
	for _, p := range paths {
		if firstNonNull(at(got, p)) == nil {
			t.Errorf("%s: forge reads it; the stand-in does not give it", p)
		}
	}
}

// TestShapeCheckCatchesDifferences makes sure the checks fail where they
// should: a field renamed, a type changed, a field the client reads left
// out, a null the schema does not allow.
func TestShapeCheckCatchesDifferences(t *testing.T) {
	d := &docs{}
	d.Components.Schemas = map[string]any{
		"pull": decode(t, []byte(`{"type":"object","properties":{
			"number":{"type":"integer"},"head":{"type":"object","properties":{"ref":{"type":"string"},"sha":{"type":"string"}}},
			"labels":{"type":"array","items":{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"}}}},
			"merged_at":{"type":"string","nullable":true},"draft":{"type":"boolean"},"locked":{"type":"boolean"},
			"value":{"oneOf":[{"type":"string","nullable":true},{"type":"integer","nullable":true}]},
			"permissions":{"type":"object","additionalProperties":{"type":"string"}}}}`)),
	}
	schema := d.ref("pull")
	want := decode(t, []byte(`{"number":1,"head":{"ref":"a","sha":"b"},"labels":[{"id":1}],"merged_at":null,"draft":false}`))
	for _, c := range []struct {
		got   string
		reads []string
		n     int
	}{
		{`{"number":1,"head":{"ref":"a","sha":"b"}}`, []string{"number", "head.ref"}, 0},
		{`{"number":"1"}`, nil, 1},                              // a string for a number
		{`{"number":1.5}`, nil, 1},                              // a fraction for an integer
		{`{"numbr":1}`, nil, 1},                                 // a name GitHub does not have
		{`{"head":{"ref":1}}`, nil, 1},                          // deeper
		{`{"labels":[{"id":"x"}]}`, nil, 1},                     // in an array
		{`{"number":1}`, []string{"head.sha"}, 1},               // a read field left out
		{`{"merged_at":"2011-01-26T19:01:12Z"}`, nil, 0},        // null in the example: the schema's type
		{`{"merged_at":1}`, nil, 1},                             // not the schema's type
		{`{"merged_at":null}`, []string{"merged_at"}, 1},        // read, but never compared
		{`{"draft":null,"number":1}`, nil, 1},                   // null the schema does not allow
		{`{"locked":true}`, nil, 0},                             // not in the example, in the schema
		{`{"locked":"yes"}`, nil, 1},                            // not the schema's type
		{`{"value":3}`, nil, 0},                                 // one of oneOf
		{`{"value":true}`, nil, 1},                              // none of oneOf
		{`{"permissions":{"contents":"read"}}`, nil, 0},         // additionalProperties
		{`{"permissions":{"contents":true}}`, nil, 1},           // additionalProperties' type
		{`{"labels":{"id":1}}`, []string{"labels[].id"}, 2},     // an object for an array, so not read
		{`{"head":{"ref":"a","extra":true}}`, nil, 1},           // an extra nested field
		{`{"number":2,"head":{"ref":"x","sha":"y"}}`, nil, 0},   // values differ: shapes do not
		{`[]`, nil, 1},                                          // an array for an object
		{`{"labels":[]}`, nil, 0},                               // an empty list
		{`{"labels":[{"id":1},{"id":2,"name":"n"}]}`, nil, 0},   // name: in the schema
		{`{"labels":[{"id":1},{"id":2,"nam":"n"}]}`, nil, 1},    // nam: nowhere
		{`{"head":{"ref":"a","sha":"b"},"number":3e0}`, nil, 0}, // an integral number
	} {
		diffs := shapeDiffs(d, decode(t, []byte(c.got)), want, schema, c.reads)
		if len(diffs) != c.n {
			t.Errorf("%s reading %v: %d differences, want %d: %q", c.got, c.reads, len(diffs), c.n, diffs)
		}
	}
	// And GitHub's error schemas, as testdata has them.
	gh := loadDocs(t)
	failed := gh.errorSchema(t, "validation_failed")
	for _, c := range []struct {
		got string
		n   int
	}{
		{`{"message":"Validation Failed","errors":[{"resource":"PullRequest","code":"custom","message":"m"}],"documentation_url":"u","status":"422"}`, 0},
		{`{"message":"Validation Failed","status":422}`, 1},          // status is a string
		{`{"message":"x","errors":[{"code":"c","index":"1"}]}`, 1},   // index is an integer
		{`{"message":"x","errors":[{"code":"c","value":["a"]}]}`, 0}, // value: one of its oneOf
		{`{"message":"x","errors":[{"code":"c","value":true}]}`, 1},  // none of them
		{`{"message":"x","error":"y"}`, 1},                           // a name the schema does not have
	} {
		diffs := shapeDiffs(gh, decode(t, []byte(c.got)), nil, failed, nil)
		if len(diffs) != c.n {
			t.Errorf("%s: %d differences, want %d: %q", c.got, len(diffs), c.n, diffs)
		}
	}
}

// docs is testdata/schemas.json: the response schemas of the operations
// and of the error responses, and the component schemas they name.
type docs struct {
	Operations map[string]struct {
		Response string         `json:"response"`
		Schema   map[string]any `json:"schema"`
	} `json:"operations"`
	Responses map[string]struct {
		Content map[string]struct {
			Schema map[string]any `json:"schema"`
		} `json:"content"`
	} `json:"responses"`
	Components struct {
		Schemas map[string]any `json:"schemas"`
	} `json:"components"`
}

func loadDocs(t *testing.T) *docs {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "schemas.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d docs
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return &d
}

// operation is an operation's success response schema.
func (d *docs) operation(t *testing.T, id string) map[string]any {
	t.Helper()
	op, ok := d.Operations[id]
	if !ok {
		t.Fatalf("testdata/schemas.json has no operation %s", id)
	}
	return op.Schema
}

// errorSchema is the schema of an error response (validation_failed,
// forbidden, not_found, requires_authentication) with basic-error's
// fields added: every error body of GitHub's now carries status, which
// validation-error does not list.
func (d *docs) errorSchema(t *testing.T, response string) map[string]any {
	t.Helper()
	r, ok := d.Responses[response]
	if !ok {
		t.Fatalf("testdata/schemas.json has no response %s", response)
	}
	props := map[string]any{}
	for _, s := range []map[string]any{d.resolve(d.ref("basic-error")), d.resolve(r.Content["application/json"].Schema)} {
		for k, v := range s["properties"].(map[string]any) {
			props[k] = v
		}
	}
	return map[string]any{"type": "object", "properties": props}
}

func (d *docs) ref(name string) map[string]any {
	return map[string]any{"$ref": "#/components/schemas/" + name}
}

// resolve follows $ref.
func (d *docs) resolve(s map[string]any) map[string]any {
	for range 20 {
		r, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		next, _ := d.Components.Schemas[strings.TrimPrefix(r, "#/components/schemas/")].(map[string]any)
		if next == nil {
			return nil
		}
		s = next
	}
	return s
}

// checkShape fails t for each difference of got (the stand-in's answer)
// from want (the example) and schema (GitHub's schema of the answer), and
// for each read path missing from either.
func checkShape(t *testing.T, d *docs, got, want any, schema map[string]any, reads []string) {
	t.Helper()
	for _, diff := range shapeDiffs(d, got, want, schema, reads) {
		t.Error(diff)
	}
}

// shapeDiffs lists where got's shape differs from GitHub's: a field
// neither the example nor the schema has; a JSON type other than the
// example's or, where the example has none (the field is not in it, or
// null there), the schema's; null where the schema does not allow it; a
// read path missing from got or want, or null in both, or of two types.
func shapeDiffs(d *docs, got, want any, schema map[string]any, reads []string) []string {
	var out []string
	d.diff("$", got, want, true, schema, &out)
	return append(out, readDiffs(got, want, reads)...)
}

// checkReads fails t for each read path missing from got or want, or
// null in both, or of two types.
func checkReads(t *testing.T, got, want any, reads []string) {
	t.Helper()
	for _, diff := range readDiffs(got, want, reads) {
		t.Error(diff)
	}
}

func readDiffs(got, want any, reads []string) []string {
	var out []string
	for _, p := range reads {
		gv, wv := at(got, p), at(want, p)
		switch {
		case len(gv) == 0:
			out = append(out, fmt.Sprintf("%s: forge reads it; the stand-in does not give it", p))
		case len(wv) == 0:
			out = append(out, fmt.Sprintf("%s: forge reads it; GitHub's example does not have it", p))
		default:
			g, w := firstNonNull(gv), firstNonNull(wv)
			if g == nil || w == nil {
				out = append(out, fmt.Sprintf("%s: forge reads it; null in the stand-in's answer (%v) or the example (%v), so its type is never compared", p, g == nil, w == nil))
			} else if kind(g) != kind(w) {
				out = append(out, fmt.Sprintf("%s: forge reads it as GitHub gives it, a %s; the stand-in gives a %s", p, kind(w), kind(g)))
			}
		}
	}
	return out
}

// diff compares got with want (when hasWant) and with schema (when not
// nil), appending each difference to out.
func (d *docs) diff(path string, got, want any, hasWant bool, schema map[string]any, out *[]string) {
	schema = d.resolve(schema)
	if alts, ok := schema["oneOf"].([]any); ok {
		var best []string
		for i, a := range alts {
			var try []string
			alt, _ := a.(map[string]any)
			d.diff(path, got, want, hasWant, alt, &try)
			if len(try) == 0 {
				return
			}
			if i == 0 || len(try) < len(best) {
				best = try
			}
		}
		*out = append(*out, best...)
		return
	}
	if got == nil {
		if schema != nil && (schema["type"] != nil || schema["properties"] != nil) && schema["nullable"] != true {
			*out = append(*out, path+": null, which GitHub's schema does not allow")
		}
		return
	}
	if hasWant && want != nil {
		if kg, kw := kind(got), kind(want); kg != kw {
			*out = append(*out, fmt.Sprintf("%s: a %s, where GitHub's example has a %s", path, kg, kw))
			return
		}
	} else if typ, _ := schema["type"].(string); typ != "" && !fits(got, typ) {
		*out = append(*out, fmt.Sprintf("%s: a %s, where GitHub's schema has a %s", path, kind(got), typ))
		return
	}
	switch g := got.(type) {
	case map[string]any:
		w, _ := want.(map[string]any)
		props, _ := schema["properties"].(map[string]any)
		extra, _ := schema["additionalProperties"].(map[string]any)
		for _, k := range sortedKeys(g) {
			wv, hw := w[k]
			ps, hs := props[k].(map[string]any)
			if !hs && extra != nil {
				ps, hs = extra, true
			}
			if !hw && !hs {
				if w != nil || props != nil {
					*out = append(*out, fmt.Sprintf("%s.%s: a field neither GitHub's example nor its schema has", path, k))
				}
				continue
			}
			d.diff(path+"."+k, g[k], wv, hw, ps, out)
		}
	case []any:
		items, _ := schema["items"].(map[string]any)
		w, _ := want.([]any)
		for i, gv := range g {
			p := fmt.Sprintf("%s[%d]", path, i)
			if len(w) == 0 {
				d.diff(p, gv, nil, false, items, out)
				continue
			}
			// Each element must match one of the example's.
			var best []string
			for j, wv := range w {
				var try []string
				d.diff(p, gv, wv, true, items, &try)
				if j == 0 || len(try) < len(best) {
					best = try
				}
				if len(try) == 0 {
					break
				}
			}
			*out = append(*out, best...)
		}
	case float64:
		if w, ok := want.(float64); ok && w == math.Trunc(w) && g != math.Trunc(g) {
			*out = append(*out, fmt.Sprintf("%s: %v, where GitHub's example has an integer", path, g))
		}
	}
}

// fits reports whether v is of an OpenAPI type.
func fits(v any, typ string) bool {
	if typ == "integer" {
		f, ok := v.(float64)
		return ok && f == math.Trunc(f)
	}
	return kind(v) == typ
}

// at is the values at a key path ("a.b", "a[].b", "[].a"): none when a
// step is missing or of another type.
func at(v any, path string) []any {
	vals := []any{v}
	for _, step := range strings.Split(path, ".") {
		if step == "" {
			continue
		}
		name, each := strings.CutSuffix(step, "[]")
		var next []any
		for _, cur := range vals {
			if name != "" {
				m, ok := cur.(map[string]any)
				if !ok {
					continue
				}
				if cur, ok = m[name]; !ok {
					continue
				}
				if !each {
					next = append(next, cur)
					continue
				}
			}
			if arr, ok := cur.([]any); ok {
				next = append(next, arr...)
			}
		}
		vals = next
	}
	return vals
}

func firstNonNull(vals []any) any {
	for _, v := range vals {
		if v != nil {
			return v
		}
	}
	return nil
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func prefix(p string, paths []string) []string {
	out := make([]string, len(paths))
	for i, s := range paths {
		out[i] = p + s
	}
	return out
}

func example(t *testing.T, name string) any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, b)
}

func decode(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v: %.200s", err, b)
	}
	return v
}

// call sends a request with the stand-in's token, as forge does.
func call(t *testing.T, s *githubtest.Server, method, path, body string) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+githubtest.Token)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (int, []byte) {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s %s: Content-Type %q, want application/json", req.Method, req.URL.Path, ct)
	}
	return res.StatusCode, bytes.TrimSpace(b)
}
