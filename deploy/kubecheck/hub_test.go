package kubecheck

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// The flags and defaults the hub's manifests rely on are what agentmux hub
// says in its help.
func TestHubFacts(t *testing.T) {
	h := hubFacts(t)
	if h.Addr != "127.0.0.1:8090" {
		t.Errorf("hub --addr default %q; docs/kubernetes.md and the checks' messages say loopback, 8090", h.Addr)
	}
	for flag, env := range map[string]string{
		"addr": "AGENTMUX_HUB_ADDR", "token": "AGENTMUX_HUB_TOKEN", "shutdown-grace": "AGENTMUX_HUB_SHUTDOWN_GRACE",
	} {
		if got := h.EnvOf(flag); got != env {
			t.Errorf("hub --%s is set by %q, want %s (the manifests use it)", flag, got, env)
		}
	}
	if h.ShutdownGrace <= 0 {
		t.Errorf("hub --shutdown-grace default %v", h.ShutdownGrace)
	}
	// {name} in --discover-open-url is a workspace's --name, which the
	// DNS recipe of docs/kubernetes.md sets with AGENTMUX_NAME.
	if server(t).Env["AGENTMUX_NAME"] != "name" {
		t.Error("agentmux reads no AGENTMUX_NAME for --name")
	}
}

func TestParseHubHelp(t *testing.T) {
	const good = `agentmux hub shows the sessions.

Usage:
  agentmux hub [flags]

  --addr (AGENTMUX_HUB_ADDR)
      address to listen on, host:port (default 127.0.0.1:8090)
  --discover (AGENTMUX_HUB_DISCOVER)
      find workspaces in DNS: dns:NAME:PORT (SRV records); repeat for several
  --discover-open-url (AGENTMUX_HUB_DISCOVER_OPEN_URL)
      where, {name} replaced (default: its address in DNS)
  --discover-token-file (AGENTMUX_HUB_DISCOVER_TOKEN_FILE)
      the token
  --peers (AGENTMUX_HUB_PEERS)
      a file
  --shutdown-grace (AGENTMUX_HUB_SHUTDOWN_GRACE)
      how long (default 5s)
  --token (AGENTMUX_HUB_TOKEN)
      the token
  --token-file (AGENTMUX_HUB_TOKEN_FILE)
      a file
`
	h, err := ParseHubHelp([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if h.Addr != "127.0.0.1:8090" || h.ShutdownGrace.String() != "5s" || len(h.Flags) != 8 ||
		h.Env["AGENTMUX_HUB_DISCOVER_OPEN_URL"] != "discover-open-url" || h.EnvOf("token") != "AGENTMUX_HUB_TOKEN" {
		t.Errorf("ParseHubHelp = %+v", h)
	}
	for _, tc := range []struct{ name, out, want string }{
		{"not the help", "agentmux: unknown command hub", "found no flags"},
		{"no peers", strings.Replace(good, "--peers (", "--peer (", 1), "no --peers"},
		{"no default address", strings.Replace(good, " (default 127.0.0.1:8090)", "", 1), "no default for --addr"},
		{"grace in words", strings.Replace(good, "(default 5s)", "(default five seconds)", 1), "--shutdown-grace default"},
	} {
		if _, err := ParseHubHelp([]byte(tc.out)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}

func TestHubBase(t *testing.T) {
	s := render(t, loadRepo(t), root+"/hub").Set
	if len(s.Deployments) != 1 || len(s.StatefulSets) != 0 || len(s.Services) != 2 || len(s.NetworkPolicies) != 1 || len(s.Secrets) != 0 {
		t.Fatalf("the hub base renders %d Deployments, %d StatefulSets, %d Services, %d NetworkPolicies, %d Secrets; want 1, 0, 2, 1, 0",
			len(s.Deployments), len(s.StatefulSets), len(s.Services), len(s.NetworkPolicies), len(s.Secrets))
	}
	err := Check(s, Options{Image: image(t), Server: server(t), Hub: hubFacts(t), Controller: IngressNginx})
	for _, want := range []string{
		`refers to Secret "agentmux-hub-secrets", which is not among the rendered objects`,
		`refers to Secret "agentmux-secrets", which is not among the rendered objects`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("the hub base's Secrets are not rendered, and Check without ExternalSecrets said: %v", err)
		}
	}
	if err := Check(s, Options{Image: image(t), Server: server(t), Controller: IngressNginx, ExternalSecrets: true}); err == nil ||
		!strings.Contains(err.Error(), "Options.Hub is not set") {
		t.Errorf("Check of a hub without the hub's flags: %v", err)
	}
}

// writeBesideTheBase writes a kustomization of the two bases in one
// namespace, with the Secrets made by hand in the bases' comments: one
// workspace that the hub finds by DNS.
func writeBesideTheBase(t *testing.T, fsys filesys.FileSystem) string {
	dir := root + "/test/beside"
	write(t, fsys, dir+"/kustomization.yaml", `namespace: team
resources:
  - ../../base
  - ../../hub
secretGenerator:
  - name: agentmux-secrets
    literals:
      - AGENTMUX_TOKEN=`+TestToken+`
  - name: agentmux-hub-secrets
    literals:
      - AGENTMUX_TOKEN=hub-`+TestToken+`
`)
	return dir
}

// The hub base applied beside the workspace base shows that workspace:
// it finds it through the headless Service, reaches it through both
// policies, and reads the token the workspace takes from the same Secret.
func TestHubBesideTheBase(t *testing.T) {
	fsys := loadRepo(t)
	dir := writeBesideTheBase(t, fsys)
	s := render(t, fsys, dir).Set
	if err := Check(s, options(t, dir)); err != nil {
		t.Fatal(err)
	}
	wt, _ := workspaceToken(s.StatefulSets[0])
	var vol string
	for _, v := range s.Deployments[0].Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			vol = v.Secret.SecretName
		}
	}
	if !strings.HasPrefix(wt.Name, "agentmux-secrets-") || vol != wt.Name {
		t.Errorf("the workspace's token is in %s, the hub mounts %q: want one generated Secret", wt, vol)
	}
}

// writeDNSOverlay writes the second way of docs/kubernetes.md, "The hub":
// workspaces that share one token, each with its Ingress and its name,
// and the hub base as it is but for where a browser opens them.
func writeDNSOverlay(t *testing.T, fsys filesys.FileSystem) string {
	dir := root + "/test/dns"
	write(t, fsys, dir+"/kustomization.yaml", `namespace: agentmux
resources:
  - alice
  - bob
  - ../../hub
secretGenerator:
  - name: agentmux-secrets
    literals:
      - AGENTMUX_TOKEN=`+TestToken+`
  - name: agentmux-hub-secrets
    literals:
      - AGENTMUX_TOKEN=hub-`+TestToken+`
patches:
  - target:
      kind: Deployment
      name: agentmux-hub
    patch: |-
      - op: replace
        path: /spec/template/spec/containers/0/args/4
        value: --discover-open-url=https://{name}.agentmux.example.com
`)
	for _, w := range []string{"alice", "bob"} {
		write(t, fsys, dir+"/"+w+"/kustomization.yaml", `resources:
  - ../../../base
components:
  - ../../../components/ingress
nameSuffix: -`+w+`
labels:
  - pairs:
      app.kubernetes.io/instance: `+w+`
    includeSelectors: true
patches:
  - target:
      kind: Ingress
      name: agentmux
    patch: |-
      - op: replace
        path: /spec/rules/0/host
        value: `+w+`.agentmux.example.com
      - op: replace
        path: /spec/tls/0/hosts/0
        value: `+w+`.agentmux.example.com
      - op: replace
        path: /spec/tls/0/secretName
        value: agentmux-`+w+`-tls
  - target:
      kind: StatefulSet
      name: agentmux
    patch: |-
      - op: add
        path: /spec/template/spec/containers/0/env/-
        value:
          name: AGENTMUX_NAME
          value: `+w+`
`)
	}
	return dir
}

func TestDNSDiscoveryOverlay(t *testing.T) {
	fsys := loadRepo(t)
	dir := writeDNSOverlay(t, fsys)
	s := render(t, fsys, dir).Set
	if err := Check(s, options(t, dir)); err != nil {
		t.Fatal(err)
	}
	if len(s.StatefulSets) != 2 || len(s.Deployments) != 1 {
		t.Fatalf("%d workspaces, %d hubs", len(s.StatefulSets), len(s.Deployments))
	}
	a, _ := workspaceToken(s.StatefulSets[0])
	b, _ := workspaceToken(s.StatefulSets[1])
	if a != b {
		t.Errorf("the workspaces take their tokens from %s and %s, want one Secret", a, b)
	}
	if got := flagValues(s.Deployments[0].Spec.Template.Spec.Containers[0].Args, "discover-open-url"); !slices.Equal(got, []string{"https://{name}.agentmux.example.com"}) {
		t.Errorf("--discover-open-url %q", got)
	}
}

func TestExampleHub(t *testing.T) {
	s := render(t, loadRepo(t), root+"/overlays/example").Set
	if len(s.Deployments) != 1 {
		t.Fatalf("%d Deployments, want the hub", len(s.Deployments))
	}
	d := s.Deployments[0]
	c := findContainer(d.Spec.Template.Spec.Containers, HubContainerName)
	if d.Name != "agentmux-hub" || d.Namespace != "agentmux" || c.Image != "registry.example.com/agentmux:1.0.0" {
		t.Errorf("hub %s/%s runs %s", d.Namespace, d.Name, c.Image)
	}
	if len(flagValues(c.Args, "discover")) > 0 {
		t.Errorf("the example's hub discovers (%q): its workspaces have a token each", c.Args)
	}
	// Each workspace's token reaches the hub under the name the workspace
	// itself uses, hash included.
	var mounted []string
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				mounted = append(mounted, src.Secret.Name)
			}
		}
	}
	var used []string
	for _, sts := range s.StatefulSets {
		tok, _ := workspaceToken(sts)
		used = append(used, tok.Name)
		// The inbox shows alice and bob, not their pods' names.
		if want := strings.TrimPrefix(sts.Name, "agentmux-"); WorkspaceName(sts) != want {
			t.Errorf("%s is named %q in the hub, want %q", sts.Name, WorkspaceName(sts), want)
		}
	}
	slices.Sort(mounted)
	slices.Sort(used)
	if len(used) != 2 || !slices.Equal(mounted, used) {
		t.Errorf("the hub mounts the Secrets %v, the workspaces use %v", mounted, used)
	}
	var ing *networkingv1.Ingress
	for _, i := range s.Ingresses {
		if i.Name == "agentmux-hub" {
			ing = i
		}
	}
	if ing == nil || ing.Spec.Rules[0].Host != "hub.agentmux.example.com" || ing.Annotations["nginx.ingress.kubernetes.io/auth-url"] == "" {
		t.Errorf("hub Ingress %+v: want hub.agentmux.example.com behind oauth2-proxy", ing)
	}
	if len(s.ConfigMaps) != 1 || !strings.Contains(s.ConfigMaps[0].Data["peers"], "http://agentmux-bob:8080 /var/run/agentmux/peers/bob/AGENTMUX_TOKEN https://bob.agentmux.example.com") {
		t.Errorf("peers ConfigMaps %v", s.ConfigMaps)
	}
}

func TestParsePeers(t *testing.T) {
	lines, err := ParsePeers("# comment\n\n  http://a:8080 /t/a https://a.example.com \nhttp://b:8080 -\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []PeerLine{{3, "http://a:8080", "/t/a", "https://a.example.com"}, {4, "http://b:8080", "-", ""}}
	if !slices.Equal(lines, want) {
		t.Errorf("ParsePeers = %+v, want %+v", lines, want)
	}
	if _, err := ParsePeers("http://a:8080\nhttp://b:8080 /t/b https://b # b's\n"); err == nil ||
		!strings.Contains(err.Error(), "line 1: 1 fields") || !strings.Contains(err.Error(), "line 2: 5 fields") {
		t.Errorf("got %v", err)
	}
}

func TestParseDiscover(t *testing.T) {
	for v, want := range map[string]DiscoverTarget{
		"dns:agentmux-workspaces:8080":         {Name: "agentmux-workspaces", Port: 8080},
		"dns:agentmux-workspaces.team.svc:80":  {Name: "agentmux-workspaces.team.svc", Port: 80},
		"dns:_http._tcp.agentmux-workspaces":   {Name: "agentmux-workspaces", Service: "http", Proto: "tcp"},
		"dns:_http._tcp.agentmux-workspaces.a": {Name: "agentmux-workspaces.a", Service: "http", Proto: "tcp"},
	} {
		if got, err := ParseDiscover(v); err != nil || got != want {
			t.Errorf("ParseDiscover(%q) = %+v, %v; want %+v", v, got, err, want)
		}
	}
	for _, v := range []string{"agentmux-workspaces:8080", "dns:agentmux-workspaces", "dns:name:http", "dns:name:0",
		"dns:_http._tcp.name:8080", "dns:_http.name", "dns::8080"} {
		if _, err := ParseDiscover(v); err == nil {
			t.Errorf("ParseDiscover(%q) took it", v)
		}
	}
}

func TestResolveFile(t *testing.T) {
	pod := &corev1.PodSpec{Volumes: []corev1.Volume{
		{Name: "whole", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}},
		{Name: "some", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Items: []corev1.KeyToPath{{Key: "k", Path: "dir/file"}}}}},
		{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}, Items: []corev1.KeyToPath{{Key: "T", Path: "a/T"}}}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "b"}, Items: []corev1.KeyToPath{{Key: "T", Path: "b/T"}}}},
		}}}},
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}}
	c := &corev1.Container{VolumeMounts: []corev1.VolumeMount{
		{Name: "whole", MountPath: "/w"},
		{Name: "some", MountPath: "/c"},
		{Name: "some", MountPath: "/one", SubPath: "dir/file"},
		{Name: "proj", MountPath: "/p/"},
		{Name: "tmp", MountPath: "/p/tmp"},
	}}
	for file, want := range map[string]string{
		"/w/TOKEN":       "Secret s TOKEN",
		"/c/dir/file":    "ConfigMap cm k",
		"/one":           "ConfigMap cm k",
		"/p/b/T":         "Secret b T",
		"/p/./a/T":       "Secret a T",
		"/w/sub/TOKEN":   "not a file",
		"/c/file":        "not a file",
		"/p/c/T":         "not a file",
		"/p/tmp/T":       "holds no Secret or ConfigMap",
		"/p":             "a directory, not a file",
		"/elsewhere/T":   "on no volume",
		"/whole/nothing": "on no volume",
	} {
		f, err := resolveFile(pod, c, file)
		got := f.Kind + " " + f.Name + " " + f.Key
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, want) {
			t.Errorf("resolveFile(%s) = %q, want %q", file, got, want)
		}
	}
}

// Each hub check can fail: the rendered example, the hub beside the base,
// or the DNS recipe, changed in one way, is refused for the right reason.
func TestCheckCatchesHub(t *testing.T) {
	fsys := loadRepo(t)
	example := render(t, fsys, root+"/overlays/example")
	beside := render(t, fsys, writeBesideTheBase(t, fsys))
	dns := render(t, fsys, writeDNSOverlay(t, fsys))
	opts := options(t, root+"/overlays/example")
	for name, r := range map[string]*Rendered{"example": example, "beside": beside, "dns": dns} {
		if err := Check(clone(t, r), opts); err != nil {
			t.Fatalf("%s itself: %v", name, err)
		}
	}

	hub := func(s *Set) *appsv1.Deployment { return s.Deployments[0] }
	ctr := func(s *Set) *corev1.Container { return &hub(s).Spec.Template.Spec.Containers[0] }
	pod := func(s *Set) *corev1.PodSpec { return &hub(s).Spec.Template.Spec }
	setArg := func(s *Set, flag, value string) { // replaces --flag=..., or adds it; "" removes it
		c := ctr(s)
		c.Args = slices.DeleteFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--"+flag+"=") })
		if value != "" {
			c.Args = append(c.Args, "--"+flag+"="+value)
		}
	}
	peers := func(s *Set, old, new string) {
		cm := s.ConfigMaps[0]
		if !strings.Contains(cm.Data["peers"], old) {
			t.Fatalf("the peers file has no %q", old)
		}
		cm.Data["peers"] = strings.Replace(cm.Data["peers"], old, new, 1)
	}
	policy := func(s *Set, name string) *networkingv1.NetworkPolicy {
		for _, np := range s.NetworkPolicies {
			if np.Name == name {
				return np
			}
		}
		t.Fatalf("no NetworkPolicy %s", name)
		return nil
	}
	service := func(s *Set, name string) *corev1.Service {
		for _, svc := range s.Services {
			if svc.Name == name {
				return svc
			}
		}
		t.Fatalf("no Service %s", name)
		return nil
	}
	type mut struct {
		name   string
		mutate func(s *Set)
		want   string
	}
	run := func(r *Rendered, cases []mut) {
		t.Helper()
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				s := clone(t, r)
				tc.mutate(s)
				err := Check(s, opts)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("want an error containing %q, got:\n%v", tc.want, err)
				}
			})
		}
	}

	run(example, []mut{
		// The pod.
		{"runs a workspace", func(s *Set) { ctr(s).Args = ctr(s).Args[1:] }, `args must begin with "hub"`},
		{"unknown flag", func(s *Set) { setArg(s, "peers-file", "/x") }, "agentmux hub has no flag --peers-file"},
		{"the workspace's variable", func(s *Set) { ctr(s).Env[0].Name = TokenEnv }, "env AGENTMUX_TOKEN is not a setting of agentmux hub"},
		{"no token", func(s *Set) { ctr(s).Env = nil }, "AGENTMUX_HUB_TOKEN is not set"},
		{"token in args", func(s *Set) { setArg(s, "token", "abc") }, "the token is given in args"},
		{"token file from a Secret", func(s *Set) {
			ctr(s).Env = nil
			setArg(s, "token-file", "/var/run/agentmux/peers/alice/AGENTMUX_TOKEN")
		}, "is a Secret's file, which the hub refuses"},
		{"listens on loopback", func(s *Set) { setArg(s, "addr", "") }, "on loopback only: the Service and the probes cannot reach it; set AGENTMUX_HUB_ADDR="},
		{"no readiness probe", func(s *Set) { ctr(s).ReadinessProbe = nil }, "readinessProbe is missing"},
		{"probe elsewhere", func(s *Set) { ctr(s).LivenessProbe.HTTPGet.Path = "/" }, `livenessProbe checks "/"`},
		{"grace too short", func(s *Set) { pod(s).TerminationGracePeriodSeconds = ptr[int64](5) }, "terminationGracePeriodSeconds 5 is too short"},
		{"root", func(s *Set) { pod(s).SecurityContext.RunAsNonRoot = nil }, "runAsNonRoot must be true"},
		{"writable root", func(s *Set) { ctr(s).SecurityContext.ReadOnlyRootFilesystem = nil }, "readOnlyRootFilesystem must be true"},
		{"no memory limit", func(s *Set) { ctr(s).Resources.Limits = nil }, "no memory limit: the hub"},
		{"service links", func(s *Set) { pod(s).EnableServiceLinks = nil }, "enableServiceLinks must be false"},
		{"API token", func(s *Set) { pod(s).AutomountServiceAccountToken = nil }, "automountServiceAccountToken must be false"},
		{"mount without volume", func(s *Set) { pod(s).Volumes = pod(s).Volumes[1:] }, `mounts "peers" at /etc/agentmux-hub, but there is no such volume`},

		// The peers file and the tokens.
		{"tokens swapped", func(s *Set) {
			peers(s, "peers/alice/AGENTMUX_TOKEN", "peers/bob/AGENTMUX_TOKEN")
		}, "the token file of agentmux-alice holds key AGENTMUX_TOKEN of Secret agentmux-secrets-bob-"},
		{"token path misspelt", func(s *Set) { peers(s, "peers/alice/", "peers/alcie/") }, `is not a file of volume "peer-tokens"`},
		{"token file elsewhere", func(s *Set) { peers(s, "/var/run/agentmux/peers/alice/", "/run/secrets/alice/") }, "is on no volume"},
		{"token from the peers ConfigMap", func(s *Set) {
			peers(s, "/var/run/agentmux/peers/alice/AGENTMUX_TOKEN", "/etc/agentmux-hub/peers")
		}, `comes from ConfigMap "agentmux-hub-peers-`},
		{"no token file", func(s *Set) { peers(s, "/var/run/agentmux/peers/alice/AGENTMUX_TOKEN", "-") }, "has no token file (-)"},
		{"a workspace left out", func(s *Set) { peers(s, "http://agentmux-bob:8080", "#") },
			"workspace agentmux-bob is neither in the peers file nor found by --discover"},
		{"a workspace twice", func(s *Set) { peers(s, "http://agentmux-bob:8080", "http://agentmux-alice:8080") },
			"agentmux-alice is listed on line 6 too"},
		{"Service misspelt", func(s *Set) { peers(s, "http://agentmux-bob:8080", "http://agentmux-bobby:8080") },
			"names Service agentmux-bobby in namespace agentmux, which is not among the rendered objects"},
		{"another namespace", func(s *Set) { peers(s, "http://agentmux-bob:8080", "http://agentmux-bob.other:8080") },
			"names Service agentmux-bob in namespace other"},
		{"the hub's port", func(s *Set) { peers(s, "http://agentmux-bob:8080", "http://agentmux-bob:8090") },
			"Service agentmux-bob has no port 8090"},
		{"a pod's address", func(s *Set) { peers(s, "http://agentmux-bob:8080", "http://10.1.2.3:8080") }, "is a pod's address"},
		{"Service to another port", func(s *Set) { service(s, "agentmux-bob").Spec.Ports[0].TargetPort = intstr.FromInt32(9000) },
			"port 8080 of Service agentmux-bob does not lead to agentmux-bob's agentmux port 8080"},
		{"opens the other workspace", func(s *Set) { peers(s, "https://alice.agentmux.example.com", "https://bob.agentmux.example.com") },
			"https://bob.agentmux.example.com opens agentmux-alice, but Ingress agentmux-bob sends that host to Service agentmux-bob"},
		{"opens a host no Ingress serves", func(s *Set) { peers(s, "https://alice.agentmux.example.com", "https://alice.example.com") },
			"no Ingress serves the host alice.example.com"},
		{"opens over http", func(s *Set) { peers(s, "https://alice.", "http://alice.") }, "is plain http"},
		{"a comment after the fields", func(s *Set) { peers(s, "https://bob.agentmux.example.com", "https://bob.agentmux.example.com # bob") },
			"line 7: 5 fields"},
		{"peers file by subPath", func(s *Set) {
			for i, m := range ctr(s).VolumeMounts {
				if m.Name == "peers" {
					ctr(s).VolumeMounts[i].MountPath, ctr(s).VolumeMounts[i].SubPath = "/etc/agentmux-hub/peers", "peers"
				}
			}
		}, "is mounted with subPath"},
		{"peers ConfigMap missing", func(s *Set) { s.ConfigMaps = nil }, `mounts ConfigMap "agentmux-hub-peers-`},
		{"no --peers", func(s *Set) { setArg(s, "peers", "") }, "neither --peers nor --discover"},
		{"--peer", func(s *Set) { setArg(s, "peer", "http://agentmux-carol:8080") }, "a workspace without a token"},
		{"whole Secret mounted", func(s *Set) {
			for _, v := range pod(s).Volumes {
				if v.Projected != nil {
					v.Projected.Sources[0].Secret.Items = nil
				}
			}
		}, `mounts every key of Secret "agentmux-secrets-alice-`},
		{"a workspace's Secret missing", func(s *Set) {
			s.Secrets = slices.DeleteFunc(s.Secrets, func(sec *corev1.Secret) bool { return strings.HasPrefix(sec.Name, "agentmux-secrets-bob-") })
		}, `Deployment agentmux/agentmux-hub: refers to Secret "agentmux-secrets-bob-`},
		{"discovery flags without --discover", func(s *Set) { setArg(s, "discover-open-url", "https://{name}.example.com") },
			"--discover-open-url without --discover does nothing"},

		// Services and NetworkPolicies.
		{"no Service", func(s *Set) {
			s.Services = slices.DeleteFunc(s.Services, func(svc *corev1.Service) bool { return svc.Name == "agentmux-hub" })
		}, "no Service leads to the hub's port 8090"},
		{"a Service for the hub and a workspace", func(s *Set) {
			hub(s).Spec.Template.Labels["team"] = "a"
			s.StatefulSets[0].Spec.Template.Labels["team"] = "a"
			service(s, "agentmux-hub").Spec.Selector = map[string]string{"team": "a"}
		}, "selects the pods of the workspaces (agentmux-alice) and of the hub (agentmux-hub)"},
		{"policy selects other pods", func(s *Set) {
			policy(s, "agentmux-hub").Spec.PodSelector.MatchLabels = map[string]string{"app.kubernetes.io/name": "hub"}
		}, "no NetworkPolicy of type Ingress selects the hub's pod"},
		{"egress open", func(s *Set) {
			policy(s, "agentmux-hub").Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
		}, "no NetworkPolicy of type Egress selects the hub's pod"},
		{"no DNS", func(s *Set) { np := policy(s, "agentmux-hub"); np.Spec.Egress = np.Spec.Egress[:1] },
			"do not let the hub reach the cluster's DNS"},
		{"DNS over UDP only", func(s *Set) { np := policy(s, "agentmux-hub"); np.Spec.Egress[1].Ports = np.Spec.Egress[1].Ports[:1] },
			"on port 53/TCP"},
		{"out to anything on 8080", func(s *Set) { policy(s, "agentmux-hub").Spec.Egress[0].To = nil },
			`let the hub out to a pod map[app.kubernetes.io/name:intruder] in namespace "intruder" on port 8080`},
		{"out to anything", func(s *Set) {
			policy(s, "agentmux-hub").Spec.Egress = append(policy(s, "agentmux-hub").Spec.Egress, networkingv1.NetworkPolicyEgressRule{})
		},
			`let the hub out to a pod map[app.kubernetes.io/name:intruder] in namespace "agentmux" on port 443`},
		{"not to the workspaces", func(s *Set) {
			policy(s, "agentmux-hub").Spec.Egress[0].Ports[0].Port = ptr(intstr.FromInt32(9000))
		}, "do not let the hub reach agentmux-alice on port 8080"},
		{"egress by ipBlock", func(s *Set) {
			np := policy(s, "agentmux-hub")
			np.Spec.Egress = append(np.Spec.Egress, networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0"}}}})
		}, "lets out to an ipBlock"},
		{"the controller kept out", func(s *Set) {
			policy(s, "agentmux-hub").Spec.Ingress[0].From[0].NamespaceSelector.MatchLabels = map[string]string{"kubernetes.io/metadata.name": "traefik"}
		}, "do not admit the ingress controller"},
		{"the workspaces let in", func(s *Set) {
			np := policy(s, "agentmux-hub")
			np.Spec.Ingress[0].From = append(np.Spec.Ingress[0].From, networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{}})
		}, `admit a pod map[app.kubernetes.io/instance:alice app.kubernetes.io/name:agentmux] in namespace "agentmux" to the hub`},
		{"a workspace shuts the hub out", func(s *Set) { np := policy(s, "agentmux-alice"); np.Spec.Ingress = np.Spec.Ingress[:1] },
			"do not admit the hub (a pod map[app.kubernetes.io/instance:agentmux-hub app.kubernetes.io/name:agentmux-hub]"},
		{"a workspace lets in hubs of any namespace", func(s *Set) {
			policy(s, "agentmux-alice").Spec.Ingress[1].From[0].NamespaceSelector = &metav1.LabelSelector{}
		}, `admit a pod map[app.kubernetes.io/instance:agentmux-hub app.kubernetes.io/name:agentmux-hub] in namespace "intruder"`},
	})

	run(beside, []mut{
		{"another token", func(s *Set) {
			for _, v := range pod(s).Volumes {
				if v.Secret != nil {
					v.Secret.SecretName = "shared"
				}
			}
			s.Secrets = append(s.Secrets, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: "team"}, Data: map[string][]byte{TokenEnv: []byte("x")}})
		}, "but the hub gives every workspace it finds key AGENTMUX_TOKEN of Secret shared: with a token each, list the workspaces in a peers file"},
		{"no token file", func(s *Set) { setArg(s, "discover-token-file", "") }, "--discover without --discover-token-file"},
		{"no open URL", func(s *Set) { setArg(s, "discover-open-url", "") }, "the Open links would lead to the pods' addresses"},
		{"too often", func(s *Set) { setArg(s, "discover-every", "100ms") }, `--discover-every "100ms" is not a duration of at least 1s`},
		{"not headless", func(s *Set) { service(s, "agentmux-workspaces").Spec.ClusterIP = "" }, "Service agentmux-workspaces is not headless"},
		{"misspelt", func(s *Set) { setArg(s, "discover", "dns:agentmux-workspace:8080") },
			"names Service agentmux-workspace in namespace team, which is not among the rendered objects"},
		{"the hub's port", func(s *Set) { setArg(s, "discover", "dns:agentmux-workspaces:8090") },
			"finds agentmux at port 8090, but it listens on 8080"},
		{"selects the hub", func(s *Set) {
			service(s, "agentmux-workspaces").Spec.Selector = map[string]string{"app.kubernetes.io/instance": "agentmux-hub"}
		}, "selects the pods of the hub agentmux-hub: the hub would find itself"},
		{"selects no workspace", func(s *Set) {
			service(s, "agentmux-workspaces").Spec.Selector = map[string]string{"app.kubernetes.io/name": "agentmux-workspace"}
		}, "workspace agentmux is neither in the peers file nor found by --discover"},
		{"SRV of another port", func(s *Set) { setArg(s, "discover", "dns:_web._tcp.agentmux-workspaces") },
			`Service agentmux-workspaces has no TCP port named "web"`},
		{"SRV port not the pods'", func(s *Set) {
			setArg(s, "discover", "dns:_http._tcp.agentmux-workspaces")
			service(s, "agentmux-workspaces").Spec.Ports[0].Port = 80
		}, `port "http" of Service agentmux-workspaces is 80 to http; for SRV records both must be agentmux's port 8080`},
	})

	run(dns, []mut{
		{"a token each", func(s *Set) {
			tok := findEnv(s.StatefulSets[1].Spec.Template.Spec.Containers[0].Env, TokenEnv).ValueFrom.SecretKeyRef
			sec := *findSecret(s, "agentmux", tok.Name)
			sec.Name = "agentmux-secrets-bob"
			s.Secrets = append(s.Secrets, &sec)
			tok.Name = sec.Name
		}, "finds agentmux-bob, which takes its token from key AGENTMUX_TOKEN of Secret agentmux-secrets-bob"},
		{"no name", func(s *Set) {
			c := &s.StatefulSets[1].Spec.Template.Spec.Containers[0]
			c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "AGENTMUX_NAME" })
		}, "https://agentmux-bob-0.agentmux.example.com opens agentmux-bob, but no Ingress serves the host agentmux-bob-0.agentmux.example.com"},
		{"one address for all", func(s *Set) { setArg(s, "discover-open-url", "https://agentmux.example.com") },
			"has no {name}: every workspace would open at that one address"},
		{"and a peers file", func(s *Set) {
			pod(s).Volumes = append(pod(s).Volumes, corev1.Volume{Name: "peers", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "peers"}}}})
			ctr(s).VolumeMounts = append(ctr(s).VolumeMounts, corev1.VolumeMount{Name: "peers", MountPath: "/etc/agentmux-hub"})
			s.ConfigMaps = append(s.ConfigMaps, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "peers", Namespace: "agentmux"},
				Data: map[string]string{"peers": "http://agentmux-alice:8080 /var/run/agentmux/workspaces/AGENTMUX_TOKEN https://alice.agentmux.example.com\n"}})
			setArg(s, "peers", "/etc/agentmux-hub/peers")
		}, "workspace agentmux-alice is both in the peers file and found by --discover: the hub would list it twice"},
	})
}
