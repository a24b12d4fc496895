package kubecheck

import (
	"context"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// The repository's files, relative to this package.
const (
	manifestsDir = "../kubernetes"
	dockerfile   = "../../Dockerfile"
	repoRoot     = "../.."
	docsFile     = "../../docs/kubernetes.md"
)

// root is where the manifests sit in the in-memory file system.
const root = "/kubernetes"

func loadRepo(t *testing.T) filesys.FileSystem {
	t.Helper()
	fsys, err := LoadTree(manifestsDir, root)
	if err != nil {
		t.Fatal(err)
	}
	return fsys
}

func image(t *testing.T) Image {
	t.Helper()
	img, err := ReadDockerfile(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// readServer builds and runs the server once for all the tests: a build
// takes seconds.
var readServer = sync.OnceValues(func() (Server, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return ReadServer(ctx, repoRoot)
})

func server(t *testing.T) Server {
	t.Helper()
	srv, err := readServer()
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

var readHub = sync.OnceValues(func() (Hub, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return ReadHub(ctx, repoRoot)
})

func hubFacts(t *testing.T) Hub {
	t.Helper()
	h, err := readHub()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// externalSecrets are the kustomizations that refer to Secrets they do
// not make: the bases, whose Secrets are made by hand, and the example's
// hub, which mounts the workspaces' Secrets, made beside it.
var externalSecrets = []string{root + "/base", root + "/hub", root + "/overlays/example/hub"}

func options(t *testing.T, dir string) Options {
	return Options{Image: image(t), Server: server(t), Hub: hubFacts(t), Controller: IngressNginx, ExternalSecrets: slices.Contains(externalSecrets, dir)}
}

func render(t *testing.T, fsys filesys.FileSystem, dir string) *Rendered {
	t.Helper()
	r, err := Render(fsys, dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestDockerfileFacts(t *testing.T) {
	img := image(t)
	want := Image{UID: 1000, GID: 1000, Home: "/home/agent", DataDir: "/data", Workspace: "/workspace", Addr: "0.0.0.0:8080"}
	got := img
	got.Entrypoint = ""
	if got != want {
		t.Errorf("Dockerfile facts = %+v, want %+v", got, want)
	}
	if !strings.Contains(img.Entrypoint, "tini") {
		t.Errorf("ENTRYPOINT %s does not run tini; the manifests rely on the image's entrypoint being the init", img.Entrypoint)
	}
	if _, err := ParseDockerfile([]byte("FROM debian\nUSER agent\n")); err == nil {
		t.Error("a Dockerfile without the facts parsed")
	}
}

// The flags, defaults and routes the checks rely on are what the server
// prints with --print-config; these are the ones the manifests use.
func TestServerFacts(t *testing.T) {
	srv := server(t)
	if srv.ShutdownGrace != 5*time.Second {
		t.Errorf("--shutdown-grace default %v; the base's terminationGracePeriodSeconds and docs/kubernetes.md say 5s", srv.ShutdownGrace)
	}
	for _, env := range []string{"AGENTMUX_ADDR", "AGENTMUX_DATA_DIR", "AGENTMUX_WORKSPACE", "AGENTMUX_TOKEN", "AGENTMUX_SHUTDOWN_GRACE", "AGENTMUX_ALLOWED_HOSTS", "AGENTMUX_ALLOWED_ORIGINS"} {
		if srv.Env[env] == "" {
			t.Errorf("agentmux reads no %s (have %v)", env, srv.Env)
		}
	}
	if srv.Env["AGENTMUX_VERSION"] != "" {
		t.Error("AGENTMUX_VERSION is read as --version, which takes no variable")
	}
	if !slices.Contains(srv.GETRoutes, HealthPath) {
		t.Errorf("cmd/server serves no GET %s (routes %v): the probes would fail", HealthPath, srv.GETRoutes)
	}
}

// ParseServer takes --print-config's output apart, and refuses output
// that lacks what the checks need.
func TestParseServer(t *testing.T) {
	const good = `{"flags": [
		{"name": "shutdown-grace", "env": "AGENTMUX_SHUTDOWN_GRACE", "default": "2m0s", "usage": "u"},
		{"name": "version", "default": "false", "usage": "u"}],
	 "routes": [{"method": "GET", "path": "/api/health"}, {"method": "POST", "path": "/api/sessions"},
		{"method": "GET", "path": "/*"}, {"method": "GET", "path": "/api/health"}]}`
	got, err := ParseServer([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if got.ShutdownGrace != 2*time.Minute || got.Env["AGENTMUX_SHUTDOWN_GRACE"] != "shutdown-grace" ||
		len(got.Env) != 1 || !got.Flags["version"] || !slices.Equal(got.GETRoutes, []string{"/*", "/api/health"}) {
		t.Errorf("ParseServer = %+v", got)
	}
	for _, tc := range []struct{ name, out, want string }{
		{"not JSON", `agentmux: unknown flag --print-config`, "invalid character"},
		{"no flags", `{"flags": [], "routes": [{"method": "GET", "path": "/"}]}`, "no flags"},
		{"no grace", strings.Replace(good, `"shutdown-grace"`, `"grace"`, 1), "no --shutdown-grace flag"},
		{"bad grace", strings.Replace(good, `"2m0s"`, `"2 minutes"`, 1), "--shutdown-grace default"},
		{"no GET", strings.ReplaceAll(good, `"GET"`, `"PUT"`), "no GET routes"},
		{"flag twice", strings.Replace(good, `"version"`, `"shutdown-grace"`, 1), "named twice"},
	} {
		if _, err := ParseServer([]byte(tc.out)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}

// Every kustomization in deploy/kubernetes renders, decodes strictly and
// passes every check; new overlays are found and checked without a
// change here.
func TestEveryKustomization(t *testing.T) {
	fsys := loadRepo(t)
	dirs, err := Kustomizations(fsys, root)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"base", "hub", "overlays/example", "overlays/example/alice", "overlays/example/bob", "overlays/example/hub"} {
		if !slices.Contains(dirs, path.Join(root, want)) {
			t.Errorf("kustomization %s not found among %v", want, dirs)
		}
	}
	for _, dir := range dirs {
		t.Run(strings.TrimPrefix(dir, root+"/"), func(t *testing.T) {
			r := render(t, fsys, dir)
			if len(r.Set.Others) > 0 {
				t.Errorf("unexpected kinds: %v", r.Set.Others)
			}
			if err := Check(r.Set, options(t, dir)); err != nil {
				t.Errorf("%s:\n%v", dir, err)
			}
		})
	}
}

func TestBase(t *testing.T) {
	r := render(t, loadRepo(t), root+"/base")
	s := r.Set
	if len(s.StatefulSets) != 1 || len(s.Services) != 1 || len(s.NetworkPolicies) != 1 || len(s.Secrets) != 0 {
		t.Fatalf("base renders %d StatefulSets, %d Services, %d NetworkPolicies, %d Secrets; want 1, 1, 1, 0",
			len(s.StatefulSets), len(s.Services), len(s.NetworkPolicies), len(s.Secrets))
	}
	sts := s.StatefulSets[0]
	pod := sts.Spec.Template.Spec
	c := findContainer(pod.Containers, ContainerName)
	def := server(t).ShutdownGrace
	grace, err := ShutdownGrace(c, def)
	if err != nil || grace != def {
		t.Errorf("base shutdown grace = %v, %v; want the server's default %v", grace, err, def)
	}
	if got, min := time.Duration(*pod.TerminationGracePeriodSeconds)*time.Second, MinTerminationGrace(grace, DefaultMargin); got < min {
		t.Errorf("terminationGracePeriodSeconds %v < %v", got, min)
	}
	tok := findEnv(c.Env, TokenEnv)
	if tok == nil || tok.ValueFrom == nil || tok.ValueFrom.SecretKeyRef == nil ||
		tok.ValueFrom.SecretKeyRef.Name != "agentmux-secrets" || tok.ValueFrom.SecretKeyRef.Key != TokenEnv {
		t.Errorf("%s = %+v, want secretKeyRef agentmux-secrets/%s", TokenEnv, tok, TokenEnv)
	}
	if err := Check(s, Options{Image: image(t), Server: server(t), Controller: IngressNginx}); err == nil ||
		!strings.Contains(err.Error(), `refers to Secret "agentmux-secrets", which is not among the rendered objects`) {
		t.Errorf("the base's Secret is not rendered, and Check without ExternalSecrets said: %v", err)
	}
	var claims []string
	for _, vct := range sts.Spec.VolumeClaimTemplates {
		claims = append(claims, vct.Name)
	}
	slices.Sort(claims)
	if !slices.Equal(claims, []string{"data", "home", "workspace"}) {
		t.Errorf("volumeClaimTemplates %v", claims)
	}
}

func TestExampleOverlay(t *testing.T) {
	r := render(t, loadRepo(t), root+"/overlays/example")
	s := r.Set
	want := map[string]struct {
		grace, termination time.Duration
		memory             string
		host               string
		oauth2             bool
	}{
		"agentmux-alice": {5 * time.Second, 30 * time.Second, "4Gi", "alice.agentmux.example.com", true},
		"agentmux-bob":   {20 * time.Second, 45 * time.Second, "8Gi", "bob.agentmux.example.com", false},
	}
	if len(s.StatefulSets) != len(want) {
		t.Fatalf("%d StatefulSets, want %d", len(s.StatefulSets), len(want))
	}
	claims := map[string]bool{}
	secrets := map[string]bool{}
	for _, sts := range s.StatefulSets {
		w, ok := want[sts.Name]
		if !ok {
			t.Errorf("unexpected StatefulSet %s", sts.Name)
			continue
		}
		if sts.Namespace != "agentmux" {
			t.Errorf("%s in namespace %q", sts.Name, sts.Namespace)
		}
		pod := sts.Spec.Template.Spec
		c := findContainer(pod.Containers, ContainerName)
		if c.Image != "registry.example.com/agentmux:1.0.0" {
			t.Errorf("%s image %s", sts.Name, c.Image)
		}
		if g, _ := ShutdownGrace(c, server(t).ShutdownGrace); g != w.grace {
			t.Errorf("%s shutdown grace %v, want %v", sts.Name, g, w.grace)
		}
		if got := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second; got != w.termination {
			t.Errorf("%s terminationGracePeriodSeconds %v, want %v", sts.Name, got, w.termination)
		}
		if got := c.Resources.Limits[corev1.ResourceMemory]; got.Cmp(resource.MustParse(w.memory)) != 0 {
			t.Errorf("%s memory limit %s, want %s", sts.Name, got.String(), w.memory)
		}
		for _, vct := range sts.Spec.VolumeClaimTemplates {
			claim := vct.Name + "-" + sts.Name + "-0" // as the StatefulSet controller names it
			if claims[claim] {
				t.Errorf("claim %s twice", claim)
			}
			claims[claim] = true
		}
		ref := findEnv(c.Env, TokenEnv).ValueFrom.SecretKeyRef
		if !strings.HasPrefix(ref.Name, "agentmux-secrets-"+strings.TrimPrefix(sts.Name, "agentmux-")+"-") || secrets[ref.Name] {
			t.Errorf("%s takes its token from Secret %s, not a Secret of its own", sts.Name, ref.Name)
		}
		secrets[ref.Name] = true
		if sec := findSecret(s, sts.Namespace, ref.Name); sec == nil || string(sec.Data[TokenEnv]) != TestToken {
			t.Errorf("%s: Secret %s missing or without the token", sts.Name, ref.Name)
		}
		var ing *networkingv1.Ingress
		for _, i := range s.Ingresses {
			if i.Name == sts.Name {
				ing = i
			}
		}
		if ing == nil {
			t.Errorf("no Ingress %s", sts.Name)
			continue
		}
		if h := ing.Spec.Rules[0].Host; h != w.host {
			t.Errorf("Ingress %s host %s, want %s", ing.Name, h, w.host)
		}
		if b := ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name; b != sts.Spec.ServiceName {
			t.Errorf("Ingress %s leads to Service %s, not %s", ing.Name, b, sts.Spec.ServiceName)
		}
		_, hasAuth := ing.Annotations["nginx.ingress.kubernetes.io/auth-url"]
		if hasAuth != w.oauth2 {
			t.Errorf("Ingress %s auth-url annotation present=%v, want %v", ing.Name, hasAuth, w.oauth2)
		}
	}
	if len(claims) != 6 {
		t.Errorf("claims %v, want 3 per workspace", claims)
	}
	if len(s.Namespaces) != 1 || s.Namespaces[0].Name != "agentmux" ||
		s.Namespaces[0].Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Errorf("namespaces %v: want agentmux, enforcing restricted", s.Namespaces)
	}
	// The example's NetworkPolicy patch narrows the controller's pods to
	// the controller component: ingress-nginx's admission webhook jobs,
	// in the same namespace with the same name label, are kept out.
	port := corev1.ContainerPort{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}
	webhook := IngressNginx
	webhook.PodLabels = map[string]string{"app.kubernetes.io/name": "ingress-nginx", "app.kubernetes.io/component": "admission-webhook"}
	for _, np := range s.NetworkPolicies {
		if !Admits([]*networkingv1.NetworkPolicy{np}, np.Namespace, port, IngressNginx) {
			t.Errorf("NetworkPolicy %s does not admit the controller", np.Name)
		}
		if Admits([]*networkingv1.NetworkPolicy{np}, np.Namespace, port, webhook) {
			t.Errorf("NetworkPolicy %s admits ingress-nginx's admission webhook", np.Name)
		}
	}
}

func TestStrictDecoding(t *testing.T) {
	const good = `apiVersion: v1
kind: Service
metadata:
  name: s
spec:
  selector:
    app: x
  ports:
    - port: 8080
      targetPort: http
`
	if _, err := DecodeStrict([]byte(good)); err != nil {
		t.Fatalf("a valid Service: %v", err)
	}
	for name, tc := range map[string]struct{ doc, want string }{
		"unknown field":   {strings.Replace(good, "targetPort:", "tragetPort:", 1), `unknown field "spec.ports[0].tragetPort"`},
		"misplaced field": {strings.Replace(good, "spec:\n", "spec:\n  replicas: 1\n", 1), `unknown field "spec.replicas"`},
		"duplicate field": {strings.Replace(good, "  name: s\n", "  name: s\n  name: t\n", 1), `key "name" already set`},
		"unknown kind":    {strings.Replace(good, "kind: Service", "kind: Servise", 1), `no kind "Servise" is registered`},
		"no kind":         {strings.Replace(good, "kind: Service\n", "", 1), `'Kind' is missing`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeStrict([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// A patch with a typo renders in kustomize (which does not know every
// field) and is caught by the strict decoding that follows.
func TestRenderRejectsUnknownField(t *testing.T) {
	fsys := loadRepo(t)
	dir := root + "/test/typo"
	write(t, fsys, dir+"/kustomization.yaml", `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../../base
patches:
  - patch: |-
      apiVersion: apps/v1
      kind: StatefulSet
      metadata:
        name: agentmux
      spec:
        template:
          spec:
            terminationGracePeriod: 60
`)
	_, err := Render(fsys, dir)
	if err == nil || !strings.Contains(err.Error(), `unknown field "spec.template.spec.terminationGracePeriod"`) {
		t.Errorf("got %v", err)
	}
}

// Two workspaces stamped out with nameSuffix alone share their pods'
// labels: each Service then selects both pods, and the two workspaces
// answer on one address in turn. The checks see it.
func TestWorkspacesWithoutOwnLabel(t *testing.T) {
	fsys := loadRepo(t)
	dir := root + "/test/shared"
	write(t, fsys, dir+"/kustomization.yaml", "resources:\n  - one\n  - two\n")
	for _, w := range []string{"one", "two"} {
		write(t, fsys, dir+"/"+w+"/kustomization.yaml", `resources:
  - ../../../base
nameSuffix: -`+w+`
secretGenerator:
  - name: agentmux-secrets
    literals:
      - AGENTMUX_TOKEN=`+TestToken+`
`)
	}
	err := Check(render(t, fsys, dir).Set, options(t, dir))
	for _, want := range []string{
		`Service agentmux-one: selects the pods of 2 StatefulSets (agentmux-one, agentmux-two)`,
		`Service agentmux-two: selects the pods of 2 StatefulSets (agentmux-one, agentmux-two)`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in:\n%v", want, err)
		}
	}
}

// Why the base selects the controller's pods with matchExpressions: with
// matchLabels, a workspace's `labels: includeSelectors` adds its instance
// label there too, and the controller is locked out.
func TestMatchLabelsLockOutTheController(t *testing.T) {
	fsys := loadRepo(t)
	np := read(t, fsys, root+"/base/networkpolicy.yaml")
	expr := "matchExpressions:\n              - key: app.kubernetes.io/name\n                operator: In\n                values:\n                  - ingress-nginx"
	if !strings.Contains(np, expr) {
		t.Fatalf("base/networkpolicy.yaml changed shape; update this test")
	}
	write(t, fsys, root+"/base/networkpolicy.yaml", strings.Replace(np, expr, "matchLabels:\n              app.kubernetes.io/name: ingress-nginx", 1))
	dir := root + "/overlays/example/alice"
	err := Check(render(t, fsys, dir).Set, options(t, dir))
	if err == nil || !strings.Contains(err.Error(), "do not admit the ingress controller") {
		t.Errorf("got %v", err)
	}
}

// Each check can fail: a rendered base or example overlay, changed in one
// way, is refused for the right reason.
func TestCheckCatches(t *testing.T) {
	fsys := loadRepo(t)
	base := render(t, fsys, root+"/base")
	example := render(t, fsys, root+"/overlays/example")
	opts := options(t, root+"/base")

	if err := Check(clone(t, base), opts); err != nil {
		t.Fatalf("the base itself: %v", err)
	}
	if err := Check(clone(t, base), Options{Image: opts.Image, Controller: opts.Controller}); err == nil {
		t.Error("Check without the server's flags passed")
	}
	type mut struct {
		name   string
		mutate func(s *Set)
		want   string
	}
	ctr := func(s *Set) *corev1.Container {
		return findContainer(s.StatefulSets[0].Spec.Template.Spec.Containers, ContainerName)
	}
	pod := func(s *Set) *corev1.PodSpec { return &s.StatefulSets[0].Spec.Template.Spec }
	setEnv := func(s *Set, name, value string) {
		c := ctr(s)
		if e := findEnv(c.Env, name); e != nil {
			*e = corev1.EnvVar{Name: name, Value: value}
			return
		}
		c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
	}
	np := func(s *Set) *networkingv1.NetworkPolicy { return s.NetworkPolicies[0] }
	for _, tc := range []mut{
		{"shutdown grace raised, termination grace not", func(s *Set) { setEnv(s, "AGENTMUX_SHUTDOWN_GRACE", "60s") },
			"terminationGracePeriodSeconds 30 is too short: agentmux's shutdown grace is 1m0s, so the kubelet's SIGKILL must wait at least 1m6s"},
		{"shutdown grace raised by flag", func(s *Set) { ctr(s).Args = []string{"--shutdown-grace", "25s"} },
			"terminationGracePeriodSeconds 30 is too short"},
		{"grace within the margin", func(s *Set) { pod(s).TerminationGracePeriodSeconds = ptr[int64](10) },
			"terminationGracePeriodSeconds 10 is too short"},
		{"no termination grace", func(s *Set) { pod(s).TerminationGracePeriodSeconds = nil },
			"terminationGracePeriodSeconds is not set"},
		{"unreadable shutdown grace", func(s *Set) { setEnv(s, "AGENTMUX_SHUTDOWN_GRACE", "5") },
			`shutdown grace "5"`},
		{"misspelt variable", func(s *Set) { setEnv(s, "AGENTMUX_SHUTDOWN_GRACES", "20s") },
			"env AGENTMUX_SHUTDOWN_GRACES is not a setting of agentmux"},
		{"unknown flag in args", func(s *Set) { ctr(s).Args = []string{"--grace=20s"} },
			"agentmux has no flag --grace"},
		{"two replicas", func(s *Set) { s.StatefulSets[0].Spec.Replicas = ptr[int32](2) },
			"replicas must be 1"},
		{"readiness on /", func(s *Set) { ctr(s).ReadinessProbe.HTTPGet.Path = "/" },
			`readinessProbe checks "/", not the health endpoint`},
		{"no liveness probe", func(s *Set) { ctr(s).LivenessProbe = nil },
			"livenessProbe is missing"},
		{"exec probe", func(s *Set) {
			ctr(s).LivenessProbe.ProbeHandler = corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"agentmux", "health"}}}
		}, "livenessProbe must be an HTTP GET"},
		{"probe on another port", func(s *Set) { ctr(s).StartupProbe.HTTPGet.Port = intstr.FromInt32(9090) },
			"startupProbe is sent to port 9090"},
		{"listens on loopback", func(s *Set) { setEnv(s, "AGENTMUX_ADDR", "127.0.0.1:8080") },
			"on loopback only"},
		{"listens on an undeclared port", func(s *Set) { ctr(s).Args = []string{"--addr=0.0.0.0:9000"} },
			"listens on port 9000 but the container declares no such port"},
		{"volume gone", func(s *Set) { pod(s).Volumes = nil },
			`mounts "tmp" at /tmp, but there is no such volume`},
		{"no /tmp", func(s *Set) {
			pod(s).Volumes = nil
			ctr(s).VolumeMounts = slices.DeleteFunc(ctr(s).VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "tmp" })
		}, "/tmp is not a writable volume"},
		{"home on an emptyDir", func(s *Set) {
			sts := s.StatefulSets[0]
			sts.Spec.VolumeClaimTemplates = slices.DeleteFunc(sts.Spec.VolumeClaimTemplates, func(c corev1.PersistentVolumeClaim) bool { return c.Name == "home" })
			pod(s).Volumes = append(pod(s).Volumes, corev1.Volume{Name: "home", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		}, `the agent's home at /home/agent is on volume "home", which is not a volumeClaimTemplate`},
		{"database elsewhere", func(s *Set) { setEnv(s, "AGENTMUX_DATA_DIR", "/var/lib/agentmux") },
			"the session database (AGENTMUX_DATA_DIR) at /var/lib/agentmux is not on a volume"},
		{"claim never mounted", func(s *Set) {
			sts := s.StatefulSets[0]
			sts.Spec.VolumeClaimTemplates = append(sts.Spec.VolumeClaimTemplates, *sts.Spec.VolumeClaimTemplates[0].DeepCopy())
			sts.Spec.VolumeClaimTemplates[3].Name = "cache"
		}, `volumeClaimTemplate "cache" is mounted nowhere`},
		{"HOME elsewhere", func(s *Set) { setEnv(s, "HOME", "/root") },
			"HOME is /root but the image's agent user lives in /home/agent"},
		{"token written in", func(s *Set) { setEnv(s, TokenEnv, "secret") },
			"AGENTMUX_TOKEN must come from a Secret"},
		{"no token", func(s *Set) {
			ctr(s).Env = slices.DeleteFunc(ctr(s).Env, func(e corev1.EnvVar) bool { return e.Name == TokenEnv })
		}, "AGENTMUX_TOKEN is not set"},
		{"token optional", func(s *Set) { findEnv(ctr(s).Env, TokenEnv).ValueFrom.SecretKeyRef.Optional = ptr(true) },
			"secretKeyRef must not be optional"},
		{"token in args", func(s *Set) { ctr(s).Args = []string{"--token=abc"} },
			"the token is given in args"},
		{"Secret without the token", func(s *Set) {
			s.Secrets = append(s.Secrets, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "agentmux-secrets"}, Data: map[string][]byte{"token": []byte("x")}})
		}, `Secret "agentmux-secrets" has no key "AGENTMUX_TOKEN"`},
		{"Secret with an empty token", func(s *Set) {
			s.Secrets = append(s.Secrets, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "agentmux-secrets"}, Data: map[string][]byte{TokenEnv: nil}})
		}, `Secret "agentmux-secrets" has an empty AGENTMUX_TOKEN`},
		{"root", func(s *Set) { pod(s).SecurityContext.RunAsUser = ptr[int64](0) },
			"runAsUser must be the image's agent user, 1000 (Dockerfile AGENT_UID): got 0"},
		{"other user in the container", func(s *Set) { ctr(s).SecurityContext.RunAsUser = ptr[int64](1001) },
			"got 1001"},
		{"runAsNonRoot off", func(s *Set) { pod(s).SecurityContext.RunAsNonRoot = ptr(false) },
			"runAsNonRoot must be true"},
		{"no fsGroup", func(s *Set) { pod(s).SecurityContext.FSGroup = nil },
			"fsGroup must be 1000"},
		{"capabilities kept", func(s *Set) { ctr(s).SecurityContext.Capabilities = nil },
			"capabilities must drop ALL"},
		{"capability added", func(s *Set) { ctr(s).SecurityContext.Capabilities.Add = []corev1.Capability{"NET_ADMIN"} },
			"capabilities must add none"},
		{"writable root", func(s *Set) { ctr(s).SecurityContext.ReadOnlyRootFilesystem = ptr(false) },
			"readOnlyRootFilesystem must be true"},
		{"privilege escalation", func(s *Set) { ctr(s).SecurityContext.AllowPrivilegeEscalation = nil },
			"allowPrivilegeEscalation must be false"},
		{"no seccomp profile", func(s *Set) { pod(s).SecurityContext.SeccompProfile = nil },
			"violates the restricted Pod Security Standard: seccompProfile"},
		{"host path volume", func(s *Set) {
			pod(s).Volumes[0].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp"}}
		}, `violates the restricted Pod Security Standard: restricted volume types (volume "tmp" uses restricted volume type "hostPath")`},
		{"no memory limit", func(s *Set) { delete(ctr(s).Resources.Limits, corev1.ResourceMemory) },
			"no memory limit"},
		{"request above limit", func(s *Set) { ctr(s).Resources.Requests[corev1.ResourceMemory] = resource.MustParse("16Gi") },
			"memory request 16Gi is above the limit 4Gi"},
		{"service links", func(s *Set) { pod(s).EnableServiceLinks = nil },
			"enableServiceLinks must be false"},
		{"service account token", func(s *Set) { pod(s).AutomountServiceAccountToken = ptr(true) },
			"automountServiceAccountToken must be false"},
		{"command replaces tini", func(s *Set) { ctr(s).Command = []string{"/usr/local/bin/agentmux"} },
			"replaces the image's ENTRYPOINT"},
		{"variable twice", func(s *Set) { ctr(s).Env = append(ctr(s).Env, corev1.EnvVar{Name: "HOME", Value: "/home/agent"}) },
			"env HOME is set twice"},
		{"selector misses the pod", func(s *Set) { s.StatefulSets[0].Spec.Selector.MatchLabels["extra"] = "x" },
			"spec.selector"},
		{"no container agentmux", func(s *Set) { ctr(s).Name = "server" },
			`no container named "agentmux"`},
		{"policy selects other pods", func(s *Set) { np(s).Spec.PodSelector.MatchLabels = map[string]string{"app": "other"} },
			"no NetworkPolicy of type Ingress selects the pod"},
		{"policy admits everyone", func(s *Set) { np(s).Spec.Ingress[0].From = nil },
			`admit a pod map[app.kubernetes.io/name:intruder] in namespace ""`},
		{"policy admits the controller's whole namespace", func(s *Set) { np(s).Spec.Ingress[0].From[0].PodSelector = nil },
			`admit a pod map[app.kubernetes.io/name:intruder] in namespace "ingress-nginx"`},
		{"policy admits that pod label in any namespace", func(s *Set) { np(s).Spec.Ingress[0].From[0].NamespaceSelector = &metav1.LabelSelector{} },
			`in namespace "intruder"`},
		{"policy on another port", func(s *Set) { np(s).Spec.Ingress[0].Ports[0].Port = ptr(intstr.FromInt32(9000)) },
			"do not admit the ingress controller"},
		{"policy for another controller", func(s *Set) {
			np(s).Spec.Ingress[0].From[0].NamespaceSelector.MatchLabels = map[string]string{"kubernetes.io/metadata.name": "traefik"}
		}, "do not admit the ingress controller"},
		{"policy by ipBlock", func(s *Set) {
			np(s).Spec.Ingress[0].From = []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8"}}}
		}, "admits an ipBlock"},
		{"egress-only policy", func(s *Set) { np(s).Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress} },
			"no NetworkPolicy of type Ingress selects the pod"},
		{"Service selects nothing of ours", func(s *Set) { s.Services[0].Spec.Selector = map[string]string{"app": "other"} },
			"does not match the pod's labels"},
		{"serviceName wrong", func(s *Set) { s.StatefulSets[0].Spec.ServiceName = "agentmux-headless" },
			`serviceName "agentmux-headless" names no rendered Service`},
		{"Service to another port", func(s *Set) { s.Services[0].Spec.Ports[0].TargetPort = intstr.FromString("metrics") },
			"has no port that leads to agentmux's port 8080"},
		{"nothing runs", func(s *Set) { s.StatefulSets = nil },
			"no StatefulSet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := clone(t, base)
			tc.mutate(s)
			err := Check(s, opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("want an error containing %q, got:\n%v", tc.want, err)
			}
		})
	}

	exOpts := options(t, root+"/overlays/example")
	if err := Check(clone(t, example), exOpts); err != nil {
		t.Fatalf("the example itself: %v", err)
	}
	for _, tc := range []mut{
		{"host without TLS", func(s *Set) { s.Ingresses[0].Spec.TLS = nil },
			"has no TLS"},
		{"two workspaces on one host", func(s *Set) { s.Ingresses[1].Spec.Rules[0].Host = s.Ingresses[0].Spec.Rules[0].Host },
			"is also served by Ingress"},
		{"backend gone", func(s *Set) { s.Ingresses[0].Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name = "agentmux" },
			`backend Service "agentmux" is not among the rendered objects`},
		{"backend port gone", func(s *Set) {
			s.Ingresses[0].Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port = networkingv1.ServiceBackendPort{Name: "https"}
		}, "has no port"},
		{"a Service for both workspaces", func(s *Set) {
			delete(s.Services[0].Spec.Selector, "app.kubernetes.io/instance")
		}, "selects the pods of 2 StatefulSets (agentmux-alice, agentmux-bob)"},
		{"a workspace admits another", func(s *Set) {
			s.NetworkPolicies[0].Spec.Ingress[0].From = append(s.NetworkPolicies[0].Spec.Ingress[0].From,
				networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "agentmux"}}})
		}, "admit a pod map[app.kubernetes.io/instance:bob"},
		{"one name twice", func(s *Set) { s.StatefulSets[1].Name = s.StatefulSets[0].Name },
			"two StatefulSets with this name"},
		{"a Secret shared by name but missing", func(s *Set) { s.Secrets = s.Secrets[:1] },
			"which is not among the rendered objects"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := clone(t, example)
			tc.mutate(s)
			err := Check(s, exOpts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("want an error containing %q, got:\n%v", tc.want, err)
			}
		})
	}
}

// The manifests quoted in docs/kubernetes.md (a backup pod, for one) are
// valid as well, and its pods pass the namespace's restricted policy.
func TestDocsManifests(t *testing.T) {
	b, err := os.ReadFile(docsFile)
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(b, -1)
	if len(blocks) == 0 {
		t.Fatal("no yaml blocks in docs/kubernetes.md")
	}
	img := image(t)
	decoded := 0
	for _, m := range blocks {
		for _, doc := range YAMLDocuments(m[1]) {
			if regexp.MustCompile(`(?m)^apiVersion: snapshot\.storage\.k8s\.io/`).Match(doc) {
				continue // a CRD of the CSI snapshotter; not in k8s.io/api
			}
			obj, err := DecodeStrict(doc)
			if err != nil {
				t.Errorf("docs/kubernetes.md:\n%s\n%v", doc, err)
				continue
			}
			decoded++
			if p, ok := obj.(*corev1.Pod); ok {
				for _, v := range RestrictedViolations(&p.ObjectMeta, &p.Spec) {
					t.Errorf("docs/kubernetes.md: Pod %s violates the restricted Pod Security Standard: %s", p.Name, v)
				}
				if sc := p.Spec.SecurityContext; sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != img.UID {
					t.Errorf("docs/kubernetes.md: Pod %s does not run as the agent user %d, who owns the files", p.Name, img.UID)
				}
			}
		}
	}
	if decoded == 0 {
		t.Error("no Kubernetes object decoded from docs/kubernetes.md")
	}
}

func TestYAMLDocuments(t *testing.T) {
	docs := YAMLDocuments([]byte("# only a comment\n---\na: 1\n---\n\n---\nb: 2\n"))
	if len(docs) != 2 || !strings.Contains(string(docs[0]), "a: 1") || !strings.Contains(string(docs[1]), "b: 2") {
		t.Errorf("%q", docs)
	}
}

func TestFlagValue(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
		ok   bool
	}{
		{nil, "", false},
		{[]string{"--shutdown-grace=7s"}, "7s", true},
		{[]string{"-shutdown-grace", "8s"}, "8s", true},
		{[]string{"--shutdown-grace", "8s", "--shutdown-grace=9s"}, "9s", true},
		{[]string{"shutdown-grace=7s"}, "", false},
		{[]string{"--shutdown-graces=7s"}, "", false},
	} {
		if v, ok := flagValue(tc.args, "shutdown-grace"); v != tc.want || ok != tc.ok {
			t.Errorf("flagValue(%q) = %q, %v; want %q, %v", tc.args, v, ok, tc.want, tc.ok)
		}
	}
}

// helpers

func clone(t *testing.T, r *Rendered) *Set {
	t.Helper()
	var objs []Object
	for _, o := range r.Objects {
		objs = append(objs, o.DeepCopyObject())
	}
	s, err := NewSet(objs)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func write(t *testing.T, fsys filesys.FileSystem, p, content string) {
	t.Helper()
	if err := fsys.MkdirAll(path.Dir(p)); err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteFile(p, []byte(content)); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, fsys filesys.FileSystem, p string) string {
	t.Helper()
	b, err := fsys.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func ptr[T any](v T) *T { return &v }
