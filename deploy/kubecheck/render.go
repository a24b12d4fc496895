// Package kubecheck renders the Kubernetes manifests in deploy/kubernetes
// with kustomize's Go library, decodes them strictly into the Kubernetes
// API types and checks the properties an agentmux workspace needs: a
// single replica, a termination grace longer than agentmux's shutdown,
// probes on the health endpoint, persistent volumes for the database, the
// workspace and the agent's home, the token from a Secret, a non-root
// read-only container, a memory limit, settings that agentmux has, and a
// NetworkPolicy that admits the ingress controller and the hub and nobody
// else. Every Deployment is checked as the hub (hub.go): its pod as a
// workspace's, and what it does with the rest of the render, the
// workspaces it lists, the token it sends each, where it opens them and
// the policies between them. What the manifests must agree with is read
// from the repository: the image from the Dockerfile (ReadDockerfile),
// agentmux's flags, their defaults and its routes from the server itself,
// built and run with its hidden --print-config (ReadServer), and the
// hub's flags from agentmux hub --help (ReadHub).
//
// It lives in a module of its own (deploy/go.mod) so that the server's
// module does not depend on kustomize or the Kubernetes API.
package kubecheck

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// SecretsFile is the env file each workspace overlay generates its Secret
// from. It holds a real token, so git ignores it and LoadTree leaves it
// out; SecretsExample sits beside it in the repository.
const (
	SecretsFile    = "secrets.env"
	SecretsExample = "secrets.env.example"
)

// TestToken is the token LoadTree writes into every workspace's
// secrets.env.
const TestToken = "kubecheck-test-token-0123456789abcdef"

// LoadTree copies the directory tree dir on disk into an in-memory file
// system, under root (an absolute, slash-separated path). The secrets.env
// files are not copied: wherever a secrets.env.example is, a secrets.env
// holding TestToken is written instead, so rendering depends neither on
// a developer's own secrets nor on whether they exist.
func LoadTree(dir, root string) (filesys.FileSystem, error) {
	mem := filesys.MakeFsInMemory()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		target := path.Join(root, filepath.ToSlash(rel))
		if d.IsDir() {
			return mem.MkdirAll(target)
		}
		switch d.Name() {
		case SecretsFile:
			return nil
		case SecretsExample:
			secrets := path.Join(path.Dir(target), SecretsFile)
			if err := mem.WriteFile(secrets, []byte("AGENTMUX_TOKEN="+TestToken+"\n")); err != nil {
				return err
			}
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return mem.WriteFile(target, b)
	})
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", dir, err)
	}
	return mem, nil
}

// Kustomizations lists the directories under root in fsys that hold a
// buildable kustomization (kind Kustomization, not Component), sorted.
func Kustomizations(fsys filesys.FileSystem, root string) ([]string, error) {
	var dirs []string
	err := fsys.Walk(root, func(p string, info fs.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.IsDir() || path.Base(p) != "kustomization.yaml" {
			return nil
		}
		b, err := fsys.ReadFile(p)
		if err != nil {
			return err
		}
		var head struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(b, &head); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if head.Kind != "Component" {
			dirs = append(dirs, path.Dir(p))
		}
		return nil
	})
	slices.Sort(dirs)
	return dirs, err
}

// Rendered is one kustomization's output, every object decoded strictly.
type Rendered struct {
	Dir     string
	Objects []Object
	Set     *Set
}

// Render builds the kustomization in dir with kustomize's default options
// (as `kubectl kustomize` and `kustomize build` do) and decodes every
// resource strictly: unknown fields, duplicate fields and kinds that are
// not a Kubernetes API type this package knows are errors.
func Render(fsys filesys.FileSystem, dir string) (*Rendered, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	r := &Rendered{Dir: dir}
	var errs []error
	for _, res := range m.Resources() {
		b, err := res.AsYAML()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", res.CurId(), err))
			continue
		}
		obj, err := DecodeStrict(b)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", res.GetKind(), res.GetName(), err))
			continue
		}
		r.Objects = append(r.Objects, obj)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	r.Set, err = NewSet(r.Objects)
	return r, err
}

// YAMLDocuments splits a multi-document YAML stream at its "---" lines,
// dropping documents that hold only comments or nothing.
func YAMLDocuments(b []byte) [][]byte {
	var docs [][]byte
	var cur []string
	flush := func() {
		doc := strings.Join(cur, "\n")
		cur = nil
		for line := range strings.SplitSeq(doc, "\n") {
			if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
				docs = append(docs, []byte(doc+"\n"))
				return
			}
		}
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.TrimRight(line, " \t\r") == "---" {
			flush()
			continue
		}
		cur = append(cur, line)
	}
	flush()
	return docs
}
