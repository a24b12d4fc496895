package kubecheck

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

const (
	// HealthPath is agentmux's health endpoint, which needs no token
	// (the tests check that cmd/server serves it).
	HealthPath = "/api/health"
	// ExitSlack is how long after the grace agentmux may still take to
	// exit: it exits within the grace period plus one second.
	ExitSlack = time.Second
	// DefaultMargin is the time terminationGracePeriodSeconds must leave
	// beyond the grace and ExitSlack: tini, the last database write, the
	// kubelet's own latency.
	DefaultMargin = 5 * time.Second
	// ContainerName is the name of agentmux's container in the pod.
	ContainerName = "agentmux"
	// TokenEnv is the variable agentmux reads its token from.
	TokenEnv = "AGENTMUX_TOKEN"
)

// Peer is a pod that connects to a workspace: its namespace, and its own
// and its namespace's labels.
type Peer struct {
	Namespace       string
	NamespaceLabels map[string]string
	PodLabels       map[string]string
}

func (p Peer) String() string {
	return fmt.Sprintf("a pod %v in namespace %q", p.PodLabels, p.Namespace)
}

// IngressNginx is a pod of ingress-nginx's controller, as its Helm chart
// and manifests label it, in the namespace ingress-nginx.
var IngressNginx = Peer{
	Namespace:       "ingress-nginx",
	NamespaceLabels: map[string]string{"kubernetes.io/metadata.name": "ingress-nginx"},
	PodLabels: map[string]string{
		"app.kubernetes.io/name":      "ingress-nginx",
		"app.kubernetes.io/instance":  "ingress-nginx",
		"app.kubernetes.io/component": "controller",
	},
}

// Options says what the manifests are checked against.
type Options struct {
	Image Image
	// Server is agentmux's flags and defaults (ReadServer); required.
	Server Server
	// Controller is the ingress controller's pod, which the NetworkPolicy
	// must admit.
	Controller Peer
	// ExternalSecrets allows Secrets that are referenced but not rendered
	// (the base: its Secret is made by hand; a hub's kustomization: the
	// workspaces' Secrets come from theirs). Otherwise every referenced
	// Secret must be in the output, with the keys the pod needs.
	ExternalSecrets bool
	// Hub is agentmux hub's flags and defaults (ReadHub); required when
	// the set has a Deployment.
	Hub Hub
	// DNS is the cluster's DNS server's pod, which the hub must reach;
	// KubeDNS when its Namespace is empty.
	DNS Peer
	// Margin is DefaultMargin when zero.
	Margin time.Duration
}

// Set is a rendered set of objects, by kind.
type Set struct {
	StatefulSets    []*appsv1.StatefulSet
	Deployments     []*appsv1.Deployment
	Services        []*corev1.Service
	NetworkPolicies []*networkingv1.NetworkPolicy
	Secrets         []*corev1.Secret
	ConfigMaps      []*corev1.ConfigMap
	Ingresses       []*networkingv1.Ingress
	Namespaces      []*corev1.Namespace
	Others          []Object
}

// NewSet sorts objects by kind.
func NewSet(objs []Object) (*Set, error) {
	s := &Set{}
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.StatefulSet:
			s.StatefulSets = append(s.StatefulSets, o)
		case *appsv1.Deployment:
			s.Deployments = append(s.Deployments, o)
		case *corev1.Service:
			s.Services = append(s.Services, o)
		case *networkingv1.NetworkPolicy:
			s.NetworkPolicies = append(s.NetworkPolicies, o)
		case *corev1.Secret:
			s.Secrets = append(s.Secrets, o)
		case *corev1.ConfigMap:
			s.ConfigMaps = append(s.ConfigMaps, o)
		case *networkingv1.Ingress:
			s.Ingresses = append(s.Ingresses, o)
		case *corev1.Namespace:
			s.Namespaces = append(s.Namespaces, o)
		case nil:
			return nil, errors.New("nil object")
		default:
			s.Others = append(s.Others, o)
		}
	}
	return s, nil
}

func id(kind string, m metav1.ObjectMeta) string {
	if m.Namespace == "" {
		return kind + " " + m.Name
	}
	return kind + " " + m.Namespace + "/" + m.Name
}

// problems collects what one check finds, each prefixed with the object.
type problems struct {
	prefix string
	errs   *[]error
}

func (p problems) add(format string, args ...any) {
	*p.errs = append(*p.errs, fmt.Errorf("%s: %s", p.prefix, fmt.Sprintf(format, args...)))
}

// Check checks every StatefulSet in s as an agentmux workspace, and the set
// as a whole: Services, NetworkPolicies and Ingresses that select or name
// one workspace only, unique names and hosts. It returns every problem
// found, joined, or nil.
func Check(s *Set, opts Options) error {
	if opts.Margin == 0 {
		opts.Margin = DefaultMargin
	}
	if opts.DNS.Namespace == "" {
		opts.DNS = KubeDNS
	}
	var errs []error
	if opts.Server.Flags == nil {
		return errors.New("Options.Server is not set: the checks need agentmux's flags (ReadServer)")
	}
	if opts.Hub.Flags == nil && len(s.Deployments) > 0 {
		return errors.New("Options.Hub is not set: the checks need agentmux hub's flags (ReadHub)")
	}
	if len(s.StatefulSets) == 0 && len(s.Deployments) == 0 {
		errs = append(errs, errors.New("no StatefulSet and no Deployment: nothing runs agentmux or its hub"))
	}
	names := map[string]bool{}
	for _, sts := range s.StatefulSets {
		key := sts.Namespace + "/" + sts.Name
		if names[key] {
			errs = append(errs, fmt.Errorf("%s: two StatefulSets with this name", id("StatefulSet", sts.ObjectMeta)))
		}
		names[key] = true
		checkWorkspace(s, sts, opts, problems{id("StatefulSet", sts.ObjectMeta), &errs})
	}
	for _, d := range s.Deployments {
		checkHub(s, d, opts, problems{id("Deployment", d.ObjectMeta), &errs})
	}
	for _, svc := range s.Services {
		checkServiceIsolation(s, svc, problems{id("Service", svc.ObjectMeta), &errs})
	}
	checkIngresses(s, problems{"Ingress", &errs})
	return errors.Join(errs...)
}

func checkWorkspace(s *Set, sts *appsv1.StatefulSet, opts Options, p problems) {
	spec := &sts.Spec
	if spec.Replicas == nil || *spec.Replicas != 1 {
		p.add("replicas must be 1 (one agentmux per workspace; its database has one writer): got %s", ptrString(spec.Replicas))
	}
	checkSelector(spec.Selector, spec.Template.Labels, p)
	pod := &spec.Template.Spec
	c := findContainer(pod.Containers, ContainerName)
	if c == nil {
		p.add("no container named %q", ContainerName)
		return
	}

	checkPodSettings(pod, c, p)
	checkSettings(c, "agentmux", opts.Server.Flags, opts.Server.Env, p)
	checkSecurity(&spec.Template.ObjectMeta, pod, c, opts, p)
	addr := effective(c, "addr", "AGENTMUX_ADDR", opts.Image.Addr)
	httpPort := checkListen(c, addr, "AGENTMUX_ADDR", p)
	checkProbes(c, httpPort, p)
	checkGrace(pod, c, "AGENTMUX_SHUTDOWN_GRACE", opts.Server.ShutdownGrace, opts.Margin, p)
	checkResources(c, "agentmux's memory warnings are percentages of the container's limit", p)
	checkVolumes(sts, c, opts.Image, p)
	if checkTokenEnv(c, TokenEnv, p) {
		checkSecretRefs(s, sts.Namespace, pod, opts, p)
	}
	checkService(s, sts, httpPort, p)
	checkNetworkPolicy(s, sts, httpPort, opts.Controller, p)
}

func checkSelector(sel *metav1.LabelSelector, podLabels map[string]string, p problems) {
	if s, err := metav1.LabelSelectorAsSelector(sel); err != nil || sel == nil ||
		len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 || !s.Matches(labelsSet(podLabels)) {
		p.add("spec.selector %v does not select the pod template's labels %v", sel, podLabels)
	}
}

func checkPodSettings(pod *corev1.PodSpec, c *corev1.Container, p problems) {
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		p.add("automountServiceAccountToken must be false: the agents run arbitrary commands and need no Kubernetes API token")
	}
	if pod.EnableServiceLinks == nil || *pod.EnableServiceLinks {
		p.add("enableServiceLinks must be false: a Service named agentmux would add AGENTMUX_* variables to agentmux's environment")
	}
	if len(c.Command) > 0 {
		p.add("container %q sets command %q, which replaces the image's ENTRYPOINT and with it tini as PID 1; pass flags in args", c.Name, c.Command)
	}
	seen := map[string]bool{}
	for _, e := range c.Env {
		if seen[e.Name] {
			p.add("env %s is set twice (the last one wins; a patch probably added instead of replacing)", e.Name)
		}
		seen[e.Name] = true
	}
}

// checkSettings: every AGENTMUX_* variable and every flag in args is one
// program (agentmux, or agentmux hub) has. A misspelt one is ignored by
// the server (variables) or stops it from starting (flags), and neither
// shows in a rendered manifest.
func checkSettings(c *corev1.Container, program string, flags map[string]bool, env map[string]string, p problems) {
	for _, e := range c.Env {
		if strings.HasPrefix(e.Name, "AGENTMUX_") && env[e.Name] == "" {
			p.add("env %s is not a setting of %s (see %s --help): it would be ignored", e.Name, program, program)
		}
	}
	for _, a := range c.Args {
		name, ok := strings.CutPrefix(a, "-")
		if !ok {
			continue
		}
		name, _ = strings.CutPrefix(name, "-")
		name, _, _ = strings.Cut(name, "=")
		if !flags[name] {
			p.add("args: %s has no flag --%s (see %s --help); it would not start", program, name, program)
		}
	}
}

func checkSecurity(meta *metav1.ObjectMeta, pod *corev1.PodSpec, c *corev1.Container, opts Options, p problems) {
	psc := pod.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	csc := c.SecurityContext
	if csc == nil {
		csc = &corev1.SecurityContext{}
	}
	if v := firstBool(csc.RunAsNonRoot, psc.RunAsNonRoot); v == nil || !*v {
		p.add("runAsNonRoot must be true")
	}
	if v := firstInt(csc.RunAsUser, psc.RunAsUser); v == nil || *v != opts.Image.UID {
		p.add("runAsUser must be the image's agent user, %d (Dockerfile AGENT_UID): got %s", opts.Image.UID, ptrString(v))
	}
	if v := firstInt(csc.RunAsGroup, psc.RunAsGroup); v == nil || *v != opts.Image.GID {
		p.add("runAsGroup must be the agent's group, %d (Dockerfile AGENT_GID): got %s", opts.Image.GID, ptrString(v))
	}
	if psc.FSGroup == nil || *psc.FSGroup != opts.Image.GID {
		p.add("fsGroup must be %d, so new (root-owned) volumes are writable by the agent: got %s", opts.Image.GID, ptrString(psc.FSGroup))
	}
	if csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem {
		p.add("readOnlyRootFilesystem must be true (the agents write to the volumes and /tmp)")
	}
	if csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation {
		p.add("allowPrivilegeEscalation must be false")
	}
	if csc.Privileged != nil && *csc.Privileged {
		p.add("container must not be privileged")
	}
	if csc.Capabilities == nil || !slices.Contains(csc.Capabilities.Drop, "ALL") {
		p.add("capabilities must drop ALL")
	} else if len(csc.Capabilities.Add) > 0 {
		p.add("capabilities must add none: got %v", csc.Capabilities.Add)
	}
	for _, v := range RestrictedViolations(meta, pod) {
		p.add("violates the restricted Pod Security Standard: %s", v)
	}
}

// RestrictedViolations evaluates a pod against the restricted Pod Security
// Standard with the upstream checks, as the admission controller of a
// namespace labelled pod-security.kubernetes.io/enforce=restricted does,
// and says what it forbids.
func RestrictedViolations(meta *metav1.ObjectMeta, spec *corev1.PodSpec) []string {
	eval, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		return []string{"pod security evaluator: " + err.Error()}
	}
	var out []string
	lv := psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}
	for _, r := range eval.EvaluatePod(lv, meta, spec) {
		if !r.Allowed {
			out = append(out, fmt.Sprintf("%s (%s)", r.ForbiddenReason, r.ForbiddenDetail))
		}
	}
	return out
}

// checkListen checks agentmux's listen address (which env sets) and
// returns the container port it listens on, or nil.
func checkListen(c *corev1.Container, addr, env string, p problems) *corev1.ContainerPort {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		p.add("listen address %q: %v", addr, err)
		return nil
	}
	if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
		p.add("agentmux listens on %s, on loopback only: the Service and the probes cannot reach it; set %s=0.0.0.0:%s or --addr", addr, env, portStr)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		p.add("listen address %q: port is not a number", addr)
		return nil
	}
	for i := range c.Ports {
		if int(c.Ports[i].ContainerPort) == port {
			return &c.Ports[i]
		}
	}
	p.add("agentmux listens on port %d but the container declares no such port", port)
	return nil
}

func checkProbes(c *corev1.Container, httpPort *corev1.ContainerPort, p problems) {
	for _, pr := range []struct {
		name     string
		probe    *corev1.Probe
		required bool
	}{
		{"readinessProbe", c.ReadinessProbe, true},
		{"livenessProbe", c.LivenessProbe, true},
		{"startupProbe", c.StartupProbe, false},
	} {
		if pr.probe == nil {
			if pr.required {
				p.add("%s is missing", pr.name)
			}
			continue
		}
		get := pr.probe.HTTPGet
		if get == nil {
			p.add("%s must be an HTTP GET of %s", pr.name, HealthPath)
			continue
		}
		if get.Path != HealthPath {
			p.add("%s checks %q, not the health endpoint %s", pr.name, get.Path, HealthPath)
		}
		if get.Scheme != "" && get.Scheme != corev1.URISchemeHTTP {
			p.add("%s uses scheme %s; agentmux serves plain HTTP", pr.name, get.Scheme)
		}
		if httpPort != nil && !portRefersTo(get.Port, *httpPort) {
			p.add("%s is sent to port %s, not to agentmux's port %d", pr.name, get.Port.String(), httpPort.ContainerPort)
		}
	}
}

// ShutdownGrace is agentmux's --shutdown-grace in the container: from its
// args, else AGENTMUX_SHUTDOWN_GRACE, else def, the flag's default.
func ShutdownGrace(c *corev1.Container, def time.Duration) (time.Duration, error) {
	return shutdownGrace(c, "AGENTMUX_SHUTDOWN_GRACE", def)
}

// shutdownGrace is --shutdown-grace from args, else the variable env, else
// def.
func shutdownGrace(c *corev1.Container, env string, def time.Duration) (time.Duration, error) {
	v, ok := flagValue(c.Args, "shutdown-grace")
	if !ok {
		e := findEnv(c.Env, env)
		if e == nil {
			return def, nil
		}
		if e.ValueFrom != nil {
			return 0, fmt.Errorf("%s comes from valueFrom, which cannot be checked here; give it as a value", env)
		}
		v = e.Value
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("shutdown grace %q: %w", v, err)
	}
	return d, nil
}

// MinTerminationGrace is the shortest terminationGracePeriodSeconds that
// lets agentmux with this shutdown grace stop cleanly.
func MinTerminationGrace(grace, margin time.Duration) time.Duration {
	return grace + ExitSlack + margin
}

func checkGrace(pod *corev1.PodSpec, c *corev1.Container, env string, def, margin time.Duration, p problems) {
	grace, err := shutdownGrace(c, env, def)
	if err != nil {
		p.add("%v", err)
		return
	}
	need := MinTerminationGrace(grace, margin)
	if pod.TerminationGracePeriodSeconds == nil {
		p.add("terminationGracePeriodSeconds is not set; it must be at least %s (shutdown grace %s + %s + margin %s)", need, grace, ExitSlack, margin)
		return
	}
	if got := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second; got < need {
		p.add("terminationGracePeriodSeconds %d is too short: agentmux's shutdown grace is %s, so the kubelet's SIGKILL must wait at least %s (grace + %s + margin %s)",
			*pod.TerminationGracePeriodSeconds, grace, need, ExitSlack, margin)
	}
}

// checkResources: a memory limit, for the reason why, at or above the
// request.
func checkResources(c *corev1.Container, why string, p problems) {
	limit, ok := c.Resources.Limits[corev1.ResourceMemory]
	if !ok || limit.Sign() <= 0 {
		p.add("no memory limit: %s", why)
		return
	}
	if req, ok := c.Resources.Requests[corev1.ResourceMemory]; ok && req.Cmp(limit) > 0 {
		p.add("memory request %s is above the limit %s", req.String(), limit.String())
	}
}

func checkVolumes(sts *appsv1.StatefulSet, c *corev1.Container, img Image, p problems) {
	pod := &sts.Spec.Template.Spec
	podVols := map[string]*corev1.Volume{}
	for i := range pod.Volumes {
		podVols[pod.Volumes[i].Name] = &pod.Volumes[i]
	}
	claims := map[string]*corev1.PersistentVolumeClaim{}
	for i := range sts.Spec.VolumeClaimTemplates {
		claims[sts.Spec.VolumeClaimTemplates[i].Name] = &sts.Spec.VolumeClaimTemplates[i]
	}
	mounted := map[string]bool{}
	byPath := map[string]corev1.VolumeMount{}
	for _, ctr := range slices.Concat(pod.InitContainers, pod.Containers) {
		paths := map[string]bool{}
		for _, m := range ctr.VolumeMounts {
			mounted[m.Name] = true
			_, isVol := podVols[m.Name]
			_, isClaim := claims[m.Name]
			switch {
			case !isVol && !isClaim:
				p.add("container %q mounts %q at %s, but there is no such volume or volumeClaimTemplate", ctr.Name, m.Name, m.MountPath)
			case isVol && isClaim:
				p.add("%q is both a volume and a volumeClaimTemplate", m.Name)
			}
			if paths[m.MountPath] {
				p.add("container %q mounts two volumes at %s", ctr.Name, m.MountPath)
			}
			paths[m.MountPath] = true
			if ctr.Name == c.Name {
				byPath[m.MountPath] = m
			}
		}
	}
	for name := range claims {
		if !mounted[name] {
			p.add("volumeClaimTemplate %q is mounted nowhere", name)
		}
		if q, ok := claims[name].Spec.Resources.Requests[corev1.ResourceStorage]; !ok || q.Cmp(resource.MustParse("0")) <= 0 {
			p.add("volumeClaimTemplate %q requests no storage", name)
		}
		if len(claims[name].Spec.AccessModes) == 0 {
			p.add("volumeClaimTemplate %q has no accessModes", name)
		}
	}
	for name := range podVols {
		if !mounted[name] {
			p.add("volume %q is mounted nowhere", name)
		}
	}

	// What must outlive the pod: the database, the workspace and the
	// agent's home (sign-ins and conversations, which resuming needs).
	home := img.Home
	if e := findEnv(c.Env, "HOME"); e != nil && e.Value != "" {
		if e.Value != img.Home {
			p.add("HOME is %s but the image's agent user lives in %s", e.Value, img.Home)
		}
		home = e.Value
	}
	for _, need := range []struct{ what, path string }{
		{"the session database (AGENTMUX_DATA_DIR)", effective(c, "data-dir", "AGENTMUX_DATA_DIR", img.DataDir)},
		{"the workspace (AGENTMUX_WORKSPACE)", effective(c, "workspace", "AGENTMUX_WORKSPACE", img.Workspace)},
		{"the agent's home", home},
	} {
		m, ok := byPath[need.path]
		switch {
		case !ok:
			p.add("%s at %s is not on a volume: it would be lost with the pod", need.what, need.path)
		case claims[m.Name] == nil:
			p.add("%s at %s is on volume %q, which is not a volumeClaimTemplate: it would be lost with the pod", need.what, need.path, m.Name)
		case m.ReadOnly:
			p.add("%s at %s is mounted read-only", need.what, need.path)
		}
	}
	if csc := c.SecurityContext; csc != nil && csc.ReadOnlyRootFilesystem != nil && *csc.ReadOnlyRootFilesystem {
		m, ok := byPath["/tmp"]
		if !ok || m.ReadOnly {
			p.add("the root filesystem is read-only but /tmp is not a writable volume; the agents (Claude Code, npm) need it")
		} else if v := podVols[m.Name]; v != nil && v.EmptyDir == nil && claims[m.Name] == nil {
			p.add("/tmp should be an emptyDir or a claim, not %q", m.Name)
		}
	}
}

// checkTokenEnv: the token comes from a Secret, in the variable env, and
// not from args. It reports whether the references to Secrets are worth
// checking.
func checkTokenEnv(c *corev1.Container, env string, p problems) bool {
	tok := findEnv(c.Env, env)
	if _, inArgs := flagValue(c.Args, "token"); inArgs {
		p.add("the token is given in args, where anyone who can read the manifest sees it; take it from a Secret")
	}
	switch {
	case tok == nil:
		p.add("%s is not set: without a token anyone the NetworkPolicy lets through drives the agents", env)
		return false
	case tok.Value != "" || tok.ValueFrom == nil || tok.ValueFrom.SecretKeyRef == nil:
		p.add("%s must come from a Secret (valueFrom.secretKeyRef), not be written into the manifest", env)
		return false
	case tok.ValueFrom.SecretKeyRef.Optional != nil && *tok.ValueFrom.SecretKeyRef.Optional:
		p.add("%s's secretKeyRef must not be optional: a missing token would start agentmux unguarded", env)
	}
	return true
}

// checkSecretRefs: every Secret the pod's containers take variables from,
// and every Secret its volumes mount, is rendered with the keys named
// (unless opts.ExternalSecrets or the reference is optional). A Secret
// volume lists its keys in items: the hub mounts the workspaces' Secrets,
// which also hold the agents' API keys.
func checkSecretRefs(s *Set, ns string, pod *corev1.PodSpec, opts Options, p problems) {
	check := func(name, key string, optional bool) {
		sec := findSecret(s, ns, name)
		if sec == nil {
			if !opts.ExternalSecrets && !optional {
				p.add("refers to Secret %q, which is not among the rendered objects", name)
			}
			return
		}
		if key == "" {
			return
		}
		if _, ok := sec.Data[key]; !ok {
			if _, ok := sec.StringData[key]; !ok && !optional {
				p.add("Secret %q has no key %q", name, key)
				return
			}
		}
		if key == TokenEnv && len(sec.Data[key]) == 0 && sec.StringData[key] == "" {
			p.add("Secret %q has an empty %s", name, key)
		}
	}
	for _, ctr := range slices.Concat(pod.InitContainers, pod.Containers) {
		for _, e := range ctr.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				r := e.ValueFrom.SecretKeyRef
				check(r.Name, r.Key, r.Optional != nil && *r.Optional)
			}
		}
		for _, ef := range ctr.EnvFrom {
			if ef.SecretRef != nil {
				check(ef.SecretRef.Name, "", ef.SecretRef.Optional != nil && *ef.SecretRef.Optional)
			}
		}
	}
	volume := func(vol, name string, items []corev1.KeyToPath, optional *bool) {
		if len(items) == 0 {
			p.add("volume %q mounts every key of Secret %q; list the ones the pod reads in items (a workspace's Secret also holds the agents' API keys)", vol, name)
		}
		for _, it := range items {
			check(name, it.Key, optional != nil && *optional)
		}
	}
	for _, v := range pod.Volumes {
		switch {
		case v.Secret != nil:
			volume(v.Name, v.Secret.SecretName, v.Secret.Items, v.Secret.Optional)
		case v.ConfigMap != nil:
			checkConfigMapRef(s, ns, v.Name, v.ConfigMap.Name, v.ConfigMap.Items, v.ConfigMap.Optional, p)
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					volume(v.Name, src.Secret.Name, src.Secret.Items, src.Secret.Optional)
				}
				if src.ConfigMap != nil {
					checkConfigMapRef(s, ns, v.Name, src.ConfigMap.Name, src.ConfigMap.Items, src.ConfigMap.Optional, p)
				}
			}
		}
	}
}

// checkConfigMapRef: a ConfigMap a volume mounts is rendered, with the
// keys its items name. ConfigMaps are never made by hand here: each comes
// from a generator beside the pod that mounts it.
func checkConfigMapRef(s *Set, ns, vol, name string, items []corev1.KeyToPath, optional *bool, p problems) {
	if optional != nil && *optional {
		return
	}
	cm := findConfigMap(s, ns, name)
	if cm == nil {
		p.add("volume %q mounts ConfigMap %q, which is not among the rendered objects", vol, name)
		return
	}
	for _, it := range items {
		_, inData := cm.Data[it.Key]
		_, inBinary := cm.BinaryData[it.Key]
		if !inData && !inBinary {
			p.add("volume %q: ConfigMap %q has no key %q", vol, name, it.Key)
		}
	}
}

func checkService(s *Set, sts *appsv1.StatefulSet, httpPort *corev1.ContainerPort, p problems) {
	svc := findService(s, sts.Namespace, sts.Spec.ServiceName)
	if svc == nil {
		p.add("serviceName %q names no rendered Service", sts.Spec.ServiceName)
		return
	}
	if len(svc.Spec.Selector) == 0 || !labelsSet(svc.Spec.Selector).AsSelector().Matches(labelsSet(sts.Spec.Template.Labels)) {
		p.add("Service %q selects %v, which does not match the pod's labels %v", svc.Name, svc.Spec.Selector, sts.Spec.Template.Labels)
	}
	if httpPort == nil {
		return
	}
	for _, sp := range svc.Spec.Ports {
		if serviceLeadsTo(sp, *httpPort) {
			return
		}
	}
	p.add("Service %q has no port that leads to agentmux's port %d", svc.Name, httpPort.ContainerPort)
}

// checkServiceIsolation: a Service selects the pods of one workspace only,
// or two workspaces would answer on one address in turn; and never both
// a workspace and a hub. A discovery Service (headless, no StatefulSet's
// serviceName) lists every workspace on purpose: its name resolves to
// each pod's address, not to one address shared in turn.
func checkServiceIsolation(s *Set, svc *corev1.Service, p problems) {
	if len(svc.Spec.Selector) == 0 {
		return
	}
	sel := labelsSet(svc.Spec.Selector).AsSelector()
	var hits, hubs []string
	discovery := svc.Spec.ClusterIP == corev1.ClusterIPNone
	for _, sts := range s.StatefulSets {
		if sts.Namespace != svc.Namespace {
			continue
		}
		if sel.Matches(labelsSet(sts.Spec.Template.Labels)) {
			hits = append(hits, sts.Name)
		}
		if sts.Spec.ServiceName == svc.Name {
			discovery = false
		}
	}
	for _, d := range s.Deployments {
		if d.Namespace == svc.Namespace && sel.Matches(labelsSet(d.Spec.Template.Labels)) {
			hubs = append(hubs, d.Name)
		}
	}
	if len(hits) > 1 && !discovery {
		p.add("selects the pods of %d StatefulSets (%s): give each workspace its own instance label, in its selectors too", len(hits), strings.Join(hits, ", "))
	}
	if len(hits) > 0 && len(hubs) > 0 {
		p.add("selects the pods of the workspaces (%s) and of the hub (%s): give the hub a name label of its own", strings.Join(hits, ", "), strings.Join(hubs, ", "))
	}
}

// selectingPolicies returns the NetworkPolicies of namespace ns that
// select a pod with these labels and have the policy type t.
func selectingPolicies(s *Set, ns string, podLabels map[string]string, t networkingv1.PolicyType, p problems) []*networkingv1.NetworkPolicy {
	var selecting []*networkingv1.NetworkPolicy
	for _, np := range s.NetworkPolicies {
		if np.Namespace != ns {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil {
			p.add("NetworkPolicy %q: %v", np.Name, err)
			continue
		}
		if sel.Matches(labelsSet(podLabels)) && hasPolicyType(np, t) {
			selecting = append(selecting, np)
		}
	}
	return selecting
}

// checkIPBlocks: a peer given as an ipBlock, in the rules of type t,
// cannot be compared with the pods that must or must not connect.
func checkIPBlocks(nps []*networkingv1.NetworkPolicy, t networkingv1.PolicyType, p problems) {
	for _, np := range nps {
		if t == networkingv1.PolicyTypeIngress {
			for _, rule := range np.Spec.Ingress {
				for _, peer := range rule.From {
					if peer.IPBlock != nil {
						p.add("NetworkPolicy %q admits an ipBlock, which cannot be checked against the ingress controller; select its pods by label", np.Name)
					}
				}
			}
			continue
		}
		for _, rule := range np.Spec.Egress {
			for _, peer := range rule.To {
				if peer.IPBlock != nil {
					p.add("NetworkPolicy %q lets out to an ipBlock, which cannot be checked; select the pods by label", np.Name)
				}
			}
		}
	}
}

// hubPeers are the pods of the hubs in namespace ns, which the workspaces
// must admit; when none is rendered, the hub base's (HubPodLabels), so that
// a workspace applied on its own admits the hub applied beside it.
func hubPeers(s *Set, ns string) []Peer {
	var peers []Peer
	for _, d := range s.Deployments {
		if d.Namespace == ns {
			peers = append(peers, Peer{Namespace: ns, PodLabels: d.Spec.Template.Labels})
		}
	}
	if len(peers) == 0 {
		peers = append(peers, Peer{Namespace: ns, PodLabels: HubPodLabels})
	}
	return peers
}

func checkNetworkPolicy(s *Set, sts *appsv1.StatefulSet, httpPort *corev1.ContainerPort, controller Peer, p problems) {
	ns, podLabels := sts.Namespace, sts.Spec.Template.Labels
	selecting := selectingPolicies(s, ns, podLabels, networkingv1.PolicyTypeIngress, p)
	if len(selecting) == 0 {
		p.add("no NetworkPolicy of type Ingress selects the pod (labels %v): anything in the cluster can connect", podLabels)
		return
	}
	if httpPort == nil {
		return
	}
	checkIPBlocks(selecting, networkingv1.PolicyTypeIngress, p)
	if !Admits(selecting, ns, *httpPort, controller) {
		p.add("the NetworkPolicies %s do not admit the ingress controller (%s) to port %d", policyNames(selecting), controller, httpPort.ContainerPort)
	}
	for _, hub := range hubPeers(s, ns) {
		if !Admits(selecting, ns, *httpPort, hub) {
			p.add("the NetworkPolicies %s do not admit the hub (%s) to port %d: it could not list this workspace's sessions", policyNames(selecting), hub, httpPort.ContainerPort)
		}
	}
	intruders := []Peer{
		{Namespace: ns, PodLabels: map[string]string{"app.kubernetes.io/name": "intruder"}},
		{Namespace: "intruder", PodLabels: controller.PodLabels},
		{Namespace: controller.Namespace, NamespaceLabels: controller.NamespaceLabels, PodLabels: map[string]string{"app.kubernetes.io/name": "intruder"}},
		{Namespace: "intruder", PodLabels: HubPodLabels},
	}
	for _, other := range s.StatefulSets {
		if other != sts && other.Namespace == ns {
			intruders = append(intruders, Peer{Namespace: ns, PodLabels: other.Spec.Template.Labels})
		}
	}
	for _, in := range intruders {
		if Admits(selecting, ns, *httpPort, in) {
			p.add("the NetworkPolicies %s admit %s; only the ingress controller and the hub may connect", policyNames(selecting), in)
		}
	}
}

// Admits reports whether the policies (all selecting one pod in namespace
// ns, all of type Ingress) let src connect to port, by the rules of
// NetworkPolicy: a connection is allowed when any rule of any policy
// allows it. Peers with an ipBlock are taken to admit nothing here.
func Admits(policies []*networkingv1.NetworkPolicy, ns string, port corev1.ContainerPort, src Peer) bool {
	for _, np := range policies {
		for _, rule := range np.Spec.Ingress {
			if ruleAdmits(rule.Ports, rule.From, ns, port, src) {
				return true
			}
		}
	}
	return false
}

// AdmitsEgress reports whether the policies (all selecting one pod in
// namespace ns, all of type Egress) let that pod connect to dst's port,
// by the same rules as Admits. A named port in an egress rule is the
// destination pod's, as port.Name here.
func AdmitsEgress(policies []*networkingv1.NetworkPolicy, ns string, port corev1.ContainerPort, dst Peer) bool {
	for _, np := range policies {
		for _, rule := range np.Spec.Egress {
			if ruleAdmits(rule.Ports, rule.To, ns, port, dst) {
				return true
			}
		}
	}
	return false
}

// ruleAdmits reports whether one rule, of a policy in namespace ns, lets
// the other pod through to or from port.
func ruleAdmits(ports []networkingv1.NetworkPolicyPort, peers []networkingv1.NetworkPolicyPeer, ns string, port corev1.ContainerPort, other Peer) bool {
	if !portsAdmit(ports, port) {
		return false
	}
	if len(peers) == 0 {
		return true
	}
	nsLabels := maps.Clone(other.NamespaceLabels)
	if nsLabels == nil {
		nsLabels = map[string]string{}
	}
	nsLabels["kubernetes.io/metadata.name"] = other.Namespace
	for _, peer := range peers {
		if peerAdmits(peer, ns, other, nsLabels) {
			return true
		}
	}
	return false
}

func peerAdmits(peer networkingv1.NetworkPolicyPeer, ns string, src Peer, srcNSLabels map[string]string) bool {
	if peer.IPBlock != nil {
		return false
	}
	if peer.NamespaceSelector == nil && peer.PodSelector == nil {
		return false
	}
	if peer.NamespaceSelector == nil {
		if src.Namespace != ns {
			return false
		}
	} else if !selectorMatches(peer.NamespaceSelector, srcNSLabels) {
		return false
	}
	return peer.PodSelector == nil || selectorMatches(peer.PodSelector, src.PodLabels)
}

func portsAdmit(ports []networkingv1.NetworkPolicyPort, port corev1.ContainerPort) bool {
	if len(ports) == 0 {
		return true
	}
	proto := port.Protocol
	if proto == "" {
		proto = corev1.ProtocolTCP
	}
	for _, pp := range ports {
		if pp.Protocol != nil && *pp.Protocol != proto || pp.Protocol == nil && proto != corev1.ProtocolTCP {
			continue
		}
		if pp.Port == nil {
			return true
		}
		if pp.Port.Type == intstr.String {
			if pp.Port.StrVal == port.Name {
				return true
			}
			continue
		}
		lo, hi := pp.Port.IntVal, pp.Port.IntVal
		if pp.EndPort != nil {
			hi = *pp.EndPort
		}
		if port.ContainerPort >= lo && port.ContainerPort <= hi {
			return true
		}
	}
	return false
}

func checkIngresses(s *Set, p problems) {
	hosts := map[string]string{}
	for _, ing := range s.Ingresses {
		ip := problems{id("Ingress", ing.ObjectMeta), p.errs}
		if ing.Spec.IngressClassName == nil || *ing.Spec.IngressClassName == "" {
			ip.add("no ingressClassName")
		}
		tlsHosts := map[string]bool{}
		for _, t := range ing.Spec.TLS {
			if t.SecretName == "" {
				ip.add("a TLS entry without secretName")
			}
			for _, h := range t.Hosts {
				tlsHosts[h] = true
			}
		}
		for _, rule := range ing.Spec.Rules {
			if rule.Host == "" {
				ip.add("a rule without host: it would catch every name")
			} else if !tlsHosts[rule.Host] {
				ip.add("host %s has no TLS: the token would cross the network in clear", rule.Host)
			}
			if other, dup := hosts[rule.Host]; dup {
				ip.add("host %s is also served by Ingress %s", rule.Host, other)
			}
			hosts[rule.Host] = ing.Name
			if rule.HTTP == nil {
				continue
			}
			for _, path := range rule.HTTP.Paths {
				b := path.Backend.Service
				if b == nil {
					ip.add("a path without a Service backend")
					continue
				}
				svc := findService(s, ing.Namespace, b.Name)
				if svc == nil {
					ip.add("backend Service %q is not among the rendered objects", b.Name)
					continue
				}
				if !slices.ContainsFunc(svc.Spec.Ports, func(sp corev1.ServicePort) bool {
					return b.Port.Name != "" && sp.Name == b.Port.Name || b.Port.Name == "" && sp.Port == b.Port.Number
				}) {
					ip.add("backend Service %q has no port %v", b.Name, b.Port)
				}
			}
		}
	}
}

// helpers

func findContainer(cs []corev1.Container, name string) *corev1.Container {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

func findEnv(env []corev1.EnvVar, name string) *corev1.EnvVar {
	var found *corev1.EnvVar
	for i := range env {
		if env[i].Name == name {
			found = &env[i] // the last one wins, as in the kubelet
		}
	}
	return found
}

func findSecret(s *Set, ns, name string) *corev1.Secret {
	for _, sec := range s.Secrets {
		if sec.Namespace == ns && sec.Name == name {
			return sec
		}
	}
	return nil
}

func findConfigMap(s *Set, ns, name string) *corev1.ConfigMap {
	for _, cm := range s.ConfigMaps {
		if cm.Namespace == ns && cm.Name == name {
			return cm
		}
	}
	return nil
}

func findService(s *Set, ns, name string) *corev1.Service {
	for _, svc := range s.Services {
		if svc.Namespace == ns && svc.Name == name {
			return svc
		}
	}
	return nil
}

// flagValues finds every --name=value, --name value, -name=value and
// -name value in args, in order (a repeatable flag).
func flagValues(args []string, name string) []string {
	var vs []string
	for i := 0; i < len(args); i++ {
		a := strings.TrimPrefix(strings.TrimPrefix(args[i], "-"), "-")
		if a == args[i] {
			continue
		}
		if k, val, has := strings.Cut(a, "="); has && k == name {
			vs = append(vs, val)
		} else if a == name && i+1 < len(args) {
			vs = append(vs, args[i+1])
			i++
		}
	}
	return vs
}

// flagValue finds --name=value, --name value, -name=value or -name value in
// args, the last one winning as with Go's flag package.
func flagValue(args []string, name string) (string, bool) {
	vs := flagValues(args, name)
	if len(vs) == 0 {
		return "", false
	}
	return vs[len(vs)-1], true
}

// effective is the value agentmux sees for a setting: its flag in args,
// else its environment variable, else the image's default.
func effective(c *corev1.Container, flagName, env, imageDefault string) string {
	if v, ok := flagValue(c.Args, flagName); ok {
		return v
	}
	if e := findEnv(c.Env, env); e != nil && e.ValueFrom == nil && e.Value != "" {
		return e.Value
	}
	return imageDefault
}

func portRefersTo(ref intstr.IntOrString, port corev1.ContainerPort) bool {
	if ref.Type == intstr.String {
		return ref.StrVal != "" && ref.StrVal == port.Name
	}
	return ref.IntVal == port.ContainerPort
}

func hasPolicyType(np *networkingv1.NetworkPolicy, t networkingv1.PolicyType) bool {
	if len(np.Spec.PolicyTypes) > 0 {
		return slices.Contains(np.Spec.PolicyTypes, t)
	}
	// Without policyTypes, a policy is of type Ingress, and of Egress too
	// when it has egress rules.
	return t == networkingv1.PolicyTypeIngress || t == networkingv1.PolicyTypeEgress && len(np.Spec.Egress) > 0
}

func policyNames(nps []*networkingv1.NetworkPolicy) string {
	var names []string
	for _, np := range nps {
		names = append(names, np.Name)
	}
	return strings.Join(names, ", ")
}

func selectorMatches(sel *metav1.LabelSelector, l map[string]string) bool {
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && s.Matches(labelsSet(l))
}

func labelsSet(m map[string]string) labels.Set { return labels.Set(m) }

func firstBool(vs ...*bool) *bool {
	for _, v := range vs {
		if v != nil {
			return v
		}
	}
	return nil
}

func firstInt(vs ...*int64) *int64 {
	for _, v := range vs {
		if v != nil {
			return v
		}
	}
	return nil
}

func ptrString[T any](v *T) string {
	if v == nil {
		return "unset"
	}
	return fmt.Sprint(*v)
}
