package kubecheck

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Server is what the manifests must agree with in agentmux itself, read
// from the source of cmd/server: the flags it takes, the environment
// variables that set them, the --shutdown-grace default and the routes it
// serves to GET.
type Server struct {
	// Flags are the flag names, without dashes.
	Flags map[string]bool
	// Env maps each environment variable agentmux reads to its flag.
	Env map[string]string
	// ShutdownGrace is --shutdown-grace's default.
	ShutdownGrace time.Duration
	// GETRoutes are the paths registered for GET, groups' prefixes
	// included, as echo's router sees them ("/api/health", "/*").
	GETRoutes []string
}

// flagMethods are the flag.FlagSet methods that define a flag, and the
// index of the flag's name among their arguments.
var flagMethods = map[string]int{
	"BoolVar": 1, "DurationVar": 1, "Float64Var": 1, "IntVar": 1, "Int64Var": 1,
	"StringVar": 1, "TextVar": 1, "UintVar": 1, "Uint64Var": 1, "Var": 1,
	"Bool": 0, "Duration": 0, "Float64": 0, "Int": 0, "Int64": 0, "String": 0,
	"Uint": 0, "Uint64": 0, "Func": 0, "BoolFunc": 0,
}

// ReadServer reads the facts of Server from the Go files (tests excluded)
// in dir, the server's cmd/server, so that the manifests are checked
// against the flags as they are, not as they were when they were written.
func ReadServer(dir string) (Server, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return Server{}, err
	}
	files := map[string][]byte{}
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return Server{}, err
		}
		files[filepath.Base(p)] = b
	}
	return ParseServer(files)
}

// ParseServer is ReadServer on the files' contents, by file name. The
// flags are those newFlagSet defines; each flag's variable is envPrefix
// and its name in capitals, dashes made underscores, except the flags in
// noEnvFlags (cmd/server/config.go).
func ParseServer(files map[string][]byte) (Server, error) {
	fset := token.NewFileSet()
	var parsed []*ast.File
	for _, name := range slices.Sorted(maps.Keys(files)) {
		f, err := parser.ParseFile(fset, name, files[name], parser.SkipObjectResolution)
		if err != nil {
			return Server{}, fmt.Errorf("cmd/server: %w", err)
		}
		parsed = append(parsed, f)
	}
	srv := Server{Flags: map[string]bool{}, Env: map[string]string{}}
	var (
		prefix      string
		noEnv       = map[string]bool{}
		graceExpr   ast.Expr
		sawFlagSet  bool
		groups      = map[string]string{} // variable → path prefix of an echo group
		groupCalls  []*ast.AssignStmt
		routeCalls  []*ast.CallExpr
		problemsErr []error
	)
	for _, f := range parsed {
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					vs, ok := spec.(*ast.ValueSpec)
					if !ok {
						continue
					}
					for i, n := range vs.Names {
						if i >= len(vs.Values) {
							break
						}
						switch n.Name {
						case "envPrefix":
							prefix, _ = stringLit(vs.Values[i])
						case "noEnvFlags":
							if cl, ok := vs.Values[i].(*ast.CompositeLit); ok {
								for _, elt := range cl.Elts {
									if kv, ok := elt.(*ast.KeyValueExpr); ok {
										if k, ok := stringLit(kv.Key); ok {
											noEnv[k] = true
										}
									}
								}
							}
						}
					}
				}
			case *ast.FuncDecl:
				if d.Body == nil {
					continue
				}
				if d.Name.Name == "newFlagSet" {
					sawFlagSet = true
				}
				ast.Inspect(d.Body, func(n ast.Node) bool {
					switch n := n.(type) {
					case *ast.AssignStmt:
						groupCalls = append(groupCalls, n)
					case *ast.CallExpr:
						sel, ok := n.Fun.(*ast.SelectorExpr)
						if !ok {
							return true
						}
						if sel.Sel.Name == "GET" {
							routeCalls = append(routeCalls, n)
						}
						idx, isFlag := flagMethods[sel.Sel.Name]
						if d.Name.Name != "newFlagSet" || !isFlag || len(n.Args) <= idx {
							return true
						}
						name, ok := stringLit(n.Args[idx])
						if !ok {
							problemsErr = append(problemsErr, fmt.Errorf("cmd/server: a flag whose name is not a string literal at %s", fset.Position(n.Pos())))
							return true
						}
						srv.Flags[name] = true
						if name == "shutdown-grace" && idx == 1 && len(n.Args) > 2 {
							graceExpr = n.Args[2]
						}
					}
					return true
				})
			}
		}
	}
	if !sawFlagSet || len(srv.Flags) == 0 {
		problemsErr = append(problemsErr, errors.New("cmd/server: found no flags defined in newFlagSet"))
	}
	if prefix == "" {
		problemsErr = append(problemsErr, errors.New("cmd/server: found no envPrefix constant"))
	}
	for name := range srv.Flags {
		if !noEnv[name] {
			srv.Env[prefix+strings.ToUpper(strings.ReplaceAll(name, "-", "_"))] = name
		}
	}
	if graceExpr == nil {
		problemsErr = append(problemsErr, errors.New("cmd/server: found no --shutdown-grace flag with a default"))
	} else if d, err := durationExpr(graceExpr); err != nil {
		problemsErr = append(problemsErr, fmt.Errorf("cmd/server: --shutdown-grace default: %w", err))
	} else {
		srv.ShutdownGrace = d
	}

	// Routes: `api := e.Group("/api")` then `api.GET("/health", ...)`.
	// Groups of groups are resolved by repeating until nothing changes.
	groups["e"] = ""
	for changed := true; changed; {
		changed = false
		for _, as := range groupCalls {
			if len(as.Lhs) != 1 || len(as.Rhs) != 1 {
				continue
			}
			lhs, ok1 := as.Lhs[0].(*ast.Ident)
			call, ok2 := as.Rhs[0].(*ast.CallExpr)
			if !ok1 || !ok2 || len(call.Args) == 0 {
				continue
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Group" {
				continue
			}
			parent, ok := sel.X.(*ast.Ident)
			if !ok {
				continue
			}
			base, known := groups[parent.Name]
			p, isLit := stringLit(call.Args[0])
			if !known || !isLit {
				continue
			}
			if _, had := groups[lhs.Name]; !had {
				groups[lhs.Name] = base + p
				changed = true
			}
		}
	}
	for _, call := range routeCalls {
		sel := call.Fun.(*ast.SelectorExpr)
		recv, ok := sel.X.(*ast.Ident)
		if !ok || len(call.Args) == 0 {
			continue
		}
		base, known := groups[recv.Name]
		p, isLit := stringLit(call.Args[0])
		if known && isLit {
			srv.GETRoutes = append(srv.GETRoutes, base+p)
		}
	}
	slices.Sort(srv.GETRoutes)
	if len(srv.GETRoutes) == 0 {
		problemsErr = append(problemsErr, errors.New("cmd/server: found no GET routes"))
	}
	if err := errors.Join(problemsErr...); err != nil {
		return Server{}, fmt.Errorf("%w (the deploy checks read cmd/server; update kubecheck/server.go if it changed shape)", err)
	}
	return srv, nil
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// durationExpr evaluates a constant duration written as Go source: a
// number, time.Unit, or products of them (5*time.Second).
func durationExpr(e ast.Expr) (time.Duration, error) {
	switch e := e.(type) {
	case *ast.ParenExpr:
		return durationExpr(e.X)
	case *ast.BasicLit:
		if e.Kind != token.INT {
			return 0, fmt.Errorf("%s is not an integer", e.Value)
		}
		n, err := strconv.ParseInt(e.Value, 0, 64)
		return time.Duration(n), err
	case *ast.SelectorExpr:
		if pkg, ok := e.X.(*ast.Ident); ok && pkg.Name == "time" {
			if u, ok := timeUnits[e.Sel.Name]; ok {
				return u, nil
			}
		}
	case *ast.BinaryExpr:
		if e.Op == token.MUL {
			a, err := durationExpr(e.X)
			if err != nil {
				return 0, err
			}
			b, err := durationExpr(e.Y)
			return a * b, err
		}
	}
	return 0, fmt.Errorf("cannot evaluate %T", e)
}

var timeUnits = map[string]time.Duration{
	"Nanosecond": time.Nanosecond, "Microsecond": time.Microsecond, "Millisecond": time.Millisecond,
	"Second": time.Second, "Minute": time.Minute, "Hour": time.Hour,
}
