package kubecheck

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// The hub (agentmux hub, deploy/kubernetes/hub) runs in a Deployment: every
// rendered Deployment is checked as one. Besides what a workspace needs of
// its pod (non-root, read-only, probes, a token from a Secret), the checks
// follow what the hub does with the rest of the render: the workspaces it
// lists (its peers file, or the headless Service it discovers), the token
// files it sends each of them, the links it gives a browser to open them,
// and the NetworkPolicies on both sides of the connection.

// HubContainerName is the name of the hub's container.
const HubContainerName = "agentmux-hub"

// HubPodLabels are the labels of the hub base's pods, which a workspace's
// NetworkPolicy must admit when no hub is rendered beside it.
var HubPodLabels = map[string]string{
	"app.kubernetes.io/name":     "agentmux-hub",
	"app.kubernetes.io/instance": "agentmux-hub",
}

// WorkspacePodLabels are the labels of the base workspace's pod, which the
// hub must reach when no workspace is rendered beside it.
var WorkspacePodLabels = map[string]string{
	"app.kubernetes.io/name":     "agentmux",
	"app.kubernetes.io/instance": "agentmux",
}

// KubeDNS is a pod of the cluster's DNS server as kubeadm and the managed
// clusters (GKE, EKS, AKS) label CoreDNS: k8s-app=kube-dns in kube-system.
var KubeDNS = Peer{
	Namespace:       "kube-system",
	NamespaceLabels: map[string]string{"kubernetes.io/metadata.name": "kube-system"},
	PodLabels:       map[string]string{"k8s-app": "kube-dns"},
}

// secretKey is one key of one Secret: where a token is.
type secretKey struct{ Name, Key string }

func (k secretKey) String() string { return fmt.Sprintf("key %s of Secret %s", k.Key, k.Name) }

func checkHub(s *Set, d *appsv1.Deployment, opts Options, p problems) {
	checkSelector(d.Spec.Selector, d.Spec.Template.Labels, p)
	pod := &d.Spec.Template.Spec
	c := findContainer(pod.Containers, HubContainerName)
	if c == nil {
		p.add("no container named %q", HubContainerName)
		return
	}
	if len(c.Args) == 0 || c.Args[0] != "hub" {
		p.add(`args must begin with "hub": without it the image runs a workspace, not the hub`)
	}
	checkPodSettings(pod, c, p)
	checkSettings(c, "agentmux hub", opts.Hub.Flags, opts.Hub.Env, p)
	checkSecurity(&d.Spec.Template.ObjectMeta, pod, c, opts, p)
	addrEnv := opts.Hub.EnvOf("addr")
	port := checkListen(c, effective(c, "addr", addrEnv, opts.Hub.Addr), addrEnv, p)
	checkProbes(c, port, p)
	checkGrace(pod, c, opts.Hub.EnvOf("shutdown-grace"), opts.Hub.ShutdownGrace, opts.Margin, p)
	checkResources(c, "the hub would take what the node has", p)
	checkMounts(pod, p)
	tokenEnv := opts.Hub.EnvOf("token")
	if tf, ok := flagValue(c.Args, "token-file"); ok {
		if _, inArgs := flagValue(c.Args, "token"); inArgs {
			p.add("the token is given in args, where anyone who can read the manifest sees it; take it from a Secret")
		}
		if _, ok := hubSecretFile(s, d.Namespace, pod, c, "--token-file", tf, p); ok {
			// The kubelet writes a Secret's files as root's, readable by
			// the pod's group (fsGroup) or by everyone, and the hub takes
			// no token file that anyone but its owner may read.
			p.add("--token-file %s is a Secret's file, which the hub refuses (others than its owner may read it); take the token from the Secret in %s", tf, tokenEnv)
		}
	} else {
		checkTokenEnv(c, tokenEnv, p)
	}
	checkSecretRefs(s, d.Namespace, pod, opts, p)

	inPeers, usesPeers := checkPeers(s, d, c, opts, p)
	found, discovers := checkDiscovery(s, d, c, opts, p)
	for _, u := range flagValues(c.Args, "peer") {
		p.add("--peer %s is a workspace without a token, and every workspace here requires one: list it in a peers file with its token file", u)
	}
	if !usesPeers && !discovers {
		p.add("neither --peers nor --discover: the hub has no workspace to show")
	} else {
		for _, sts := range workspacesIn(s, d.Namespace) {
			switch {
			case inPeers[sts] && found[sts]:
				p.add("workspace %s is both in the peers file and found by --discover: the hub would list it twice", sts.Name)
			case !inPeers[sts] && !found[sts]:
				p.add("workspace %s is neither in the peers file nor found by --discover: the hub does not show it", sts.Name)
			}
		}
	}
	checkHubService(s, d, port, p)
	checkHubNetworkPolicy(s, d, port, opts, p)
}

// checkMounts: every mount has its volume, every volume is mounted, and no
// two mounts share a path.
func checkMounts(pod *corev1.PodSpec, p problems) {
	vols := map[string]bool{}
	for _, v := range pod.Volumes {
		vols[v.Name] = true
	}
	mounted := map[string]bool{}
	for _, ctr := range slices.Concat(pod.InitContainers, pod.Containers) {
		paths := map[string]bool{}
		for _, m := range ctr.VolumeMounts {
			mounted[m.Name] = true
			if !vols[m.Name] {
				p.add("container %q mounts %q at %s, but there is no such volume", ctr.Name, m.Name, m.MountPath)
			}
			if paths[path.Clean(m.MountPath)] {
				p.add("container %q mounts two volumes at %s", ctr.Name, m.MountPath)
			}
			paths[path.Clean(m.MountPath)] = true
		}
	}
	for _, v := range pod.Volumes {
		if !mounted[v.Name] {
			p.add("volume %q is mounted nowhere", v.Name)
		}
	}
}

// mountedFile is where a file in a container comes from: key Key of the
// Secret or ConfigMap Name, through Mount.
type mountedFile struct {
	Kind      string // "Secret" or "ConfigMap"
	Name, Key string
	Mount     corev1.VolumeMount
}

// resolveFile finds which key of which Secret or ConfigMap is the file at
// file in container c, through its volume mounts (the deepest that holds
// the path) and the volume's items, as the kubelet lays them out.
func resolveFile(pod *corev1.PodSpec, c *corev1.Container, file string) (mountedFile, error) {
	file = path.Clean(file)
	var m *corev1.VolumeMount
	for i := range c.VolumeMounts {
		mp := path.Clean(c.VolumeMounts[i].MountPath)
		if (file == mp || strings.HasPrefix(file, mp+"/")) && (m == nil || len(mp) > len(path.Clean(m.MountPath))) {
			m = &c.VolumeMounts[i]
		}
	}
	if m == nil {
		return mountedFile{}, fmt.Errorf("%s is on no volume: the container mounts nothing there", file)
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(file, path.Clean(m.MountPath)), "/")
	if m.SubPath != "" {
		rel = path.Join(m.SubPath, rel)
	}
	if rel == "" {
		return mountedFile{}, fmt.Errorf("%s is where volume %q is mounted: a directory, not a file", file, m.Name)
	}
	var v *corev1.Volume
	for i := range pod.Volumes {
		if pod.Volumes[i].Name == m.Name {
			v = &pod.Volumes[i]
		}
	}
	if v == nil {
		return mountedFile{}, fmt.Errorf("%s is on volume %q, which the pod does not have", file, m.Name)
	}
	// Without items, each key is a file of its name at the top.
	lookup := func(kind, name string, items []corev1.KeyToPath) (mountedFile, bool) {
		if len(items) == 0 {
			return mountedFile{kind, name, rel, *m}, !strings.Contains(rel, "/")
		}
		for _, it := range items {
			if path.Clean(it.Path) == rel {
				return mountedFile{kind, name, it.Key, *m}, true
			}
		}
		return mountedFile{}, false
	}
	switch {
	case v.Secret != nil:
		if f, ok := lookup("Secret", v.Secret.SecretName, v.Secret.Items); ok {
			return f, nil
		}
	case v.ConfigMap != nil:
		if f, ok := lookup("ConfigMap", v.ConfigMap.Name, v.ConfigMap.Items); ok {
			return f, nil
		}
	case v.Projected != nil:
		for _, src := range v.Projected.Sources {
			if src.Secret != nil {
				if f, ok := lookup("Secret", src.Secret.Name, src.Secret.Items); ok {
					return f, nil
				}
			}
			if src.ConfigMap != nil {
				if f, ok := lookup("ConfigMap", src.ConfigMap.Name, src.ConfigMap.Items); ok {
					return f, nil
				}
			}
		}
	default:
		return mountedFile{}, fmt.Errorf("%s is on volume %q, which holds no Secret or ConfigMap: nothing puts the file there", file, m.Name)
	}
	return mountedFile{}, fmt.Errorf("%s is not a file of volume %q: no item of it has the path %s", file, m.Name, rel)
}

// hubSecretFile checks that file, which the hub reads a token from (what
// says which), is a key of a Secret mounted in its container, and returns
// that key.
func hubSecretFile(s *Set, ns string, pod *corev1.PodSpec, c *corev1.Container, what, file string, p problems) (secretKey, bool) {
	f, err := resolveFile(pod, c, file)
	if err != nil {
		p.add("%s: %v", what, err)
		return secretKey{}, false
	}
	if f.Kind != "Secret" {
		p.add("%s: %s comes from %s %q: a token belongs in a Secret", what, file, f.Kind, f.Name)
		return secretKey{}, false
	}
	if sec := findSecret(s, ns, f.Name); sec != nil {
		if len(sec.Data[f.Key]) == 0 && sec.StringData[f.Key] == "" {
			p.add("%s: %s is %s, which is missing or empty", what, file, secretKey{f.Name, f.Key})
		}
	}
	return secretKey{f.Name, f.Key}, true
}

// PeerLine is one workspace of a peers file.
type PeerLine struct {
	Line                    int
	URL, TokenFile, OpenURL string
}

// ParsePeers reads a peers file as the hub does: one workspace a line,
// `URL TOKEN-FILE [OPEN-URL]`, blank lines and lines starting with # left
// out. A comment after the fields is refused rather than guessed at.
func ParsePeers(content string) ([]PeerLine, error) {
	var out []PeerLine
	var errs []error
	for i, line := range strings.Split(content, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		f := strings.Fields(t)
		if len(f) < 2 || len(f) > 3 {
			errs = append(errs, fmt.Errorf("line %d: %d fields, want URL TOKEN-FILE [OPEN-URL] (comments go on lines of their own)", i+1, len(f)))
			continue
		}
		pl := PeerLine{Line: i + 1, URL: f[0], TokenFile: f[1]}
		if len(f) == 3 {
			pl.OpenURL = f[2]
		}
		out = append(out, pl)
	}
	return out, errors.Join(errs...)
}

// checkPeers checks the hub's --peers file and returns the rendered
// workspaces it lists, and whether the hub has one.
func checkPeers(s *Set, d *appsv1.Deployment, c *corev1.Container, opts Options, p problems) (map[*appsv1.StatefulSet]bool, bool) {
	file, ok := flagValue(c.Args, "peers")
	if !ok {
		return nil, false
	}
	ns, pod := d.Namespace, &d.Spec.Template.Spec
	f, err := resolveFile(pod, c, file)
	if err != nil {
		p.add("--peers: %v", err)
		return nil, true
	}
	if f.Mount.SubPath != "" {
		p.add("--peers: %s is mounted with subPath, so it never changes in the pod, while the hub re-reads it when it changes: mount the directory", file)
	}
	content, found, err := fileContent(s, ns, f)
	if err != nil {
		p.add("--peers: %s: %v", file, err)
		return nil, true
	}
	if !found {
		return nil, true // a missing ConfigMap is said by checkSecretRefs
	}
	lines, err := ParsePeers(content)
	if err != nil {
		p.add("peers file %s: %v", file, err)
	}
	if len(lines) == 0 {
		p.add("peers file %s lists no workspace", file)
	}
	workspaces := workspacesIn(s, ns)
	listed := map[*appsv1.StatefulSet]bool{}
	lineOf := map[*appsv1.StatefulSet]int{}
	for _, l := range lines {
		lp := problems{fmt.Sprintf("%s: peers file %s, line %d", p.prefix, file, l.Line), p.errs}
		u, err := url.Parse(l.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			lp.add("URL %q is not an http:// address", l.URL)
			continue
		}
		var tok secretKey
		haveTok := false
		if l.TokenFile == "-" {
			lp.add("%s has no token file (-), and every workspace here requires a token", l.URL)
		} else {
			tok, haveTok = hubSecretFile(s, ns, pod, c, "token file", l.TokenFile, lp)
		}
		var open *url.URL
		if l.OpenURL != "" {
			open = checkOpenURL(l.OpenURL, lp)
		}
		if len(workspaces) == 0 {
			continue // a hub rendered without its workspaces
		}
		sts := workspaceAt(s, ns, u, opts, lp)
		if sts == nil {
			continue
		}
		if prev, dup := lineOf[sts]; dup {
			lp.add("%s is listed on line %d too", sts.Name, prev)
		}
		lineOf[sts] = l.Line
		listed[sts] = true
		if wt, ok := workspaceToken(sts); ok && haveTok && wt != tok {
			lp.add("the token file of %s holds %s, but %s takes its token from %s: it would refuse the hub", sts.Name, tok, sts.Name, wt)
		}
		if open != nil {
			checkOpensWorkspace(s, ns, open, sts, lp)
		}
	}
	return listed, true
}

// fileContent is the content of a mounted file when its Secret or
// ConfigMap is rendered; found is false when it is not.
func fileContent(s *Set, ns string, f mountedFile) (content string, found bool, err error) {
	switch f.Kind {
	case "ConfigMap":
		cm := findConfigMap(s, ns, f.Name)
		if cm == nil {
			return "", false, nil
		}
		if v, ok := cm.Data[f.Key]; ok {
			return v, true, nil
		}
		if v, ok := cm.BinaryData[f.Key]; ok {
			return string(v), true, nil
		}
	case "Secret":
		sec := findSecret(s, ns, f.Name)
		if sec == nil {
			return "", false, nil
		}
		if v, ok := sec.Data[f.Key]; ok {
			return string(v), true, nil
		}
		if v, ok := sec.StringData[f.Key]; ok {
			return v, true, nil
		}
	}
	return "", false, fmt.Errorf("%s %q has no key %q", f.Kind, f.Name, f.Key)
}

// checkOpenURL: where a browser opens a workspace is an absolute address,
// over https unless it is the browser's own machine (a port-forward).
func checkOpenURL(raw string, p problems) *url.URL {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.add("OPEN-URL %q is not an absolute http(s) address", raw)
		return nil
	}
	if u.Scheme == "http" && !isLocalhost(u.Hostname()) {
		p.add("OPEN-URL %s is plain http: the workspace's token would cross the network in clear", raw)
	}
	return u
}

func isLocalhost(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

// workspaceAt is the workspace a URL inside the cluster leads to: through
// the Service its host names (NAME or NAME.NAMESPACE...) and the Service's
// port, to the pod of one StatefulSet and its agentmux port.
func workspaceAt(s *Set, ns string, u *url.URL, opts Options, p problems) *appsv1.StatefulSet {
	host := u.Hostname()
	if net.ParseIP(host) != nil {
		p.add("%s is a pod's address, which changes when the pod moves: name its Service", u)
		return nil
	}
	labels := strings.Split(host, ".")
	svcNS := ns
	if len(labels) > 1 {
		svcNS = labels[1]
	}
	svc := findService(s, svcNS, labels[0])
	if svc == nil {
		p.add("%s names Service %s in namespace %s, which is not among the rendered objects", u, labels[0], svcNS)
		return nil
	}
	port := 80
	if u.Scheme == "https" {
		port = 443
	}
	if u.Port() != "" {
		port, _ = strconv.Atoi(u.Port())
	}
	var sp *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if int(svc.Spec.Ports[i].Port) == port {
			sp = &svc.Spec.Ports[i]
		}
	}
	if sp == nil {
		p.add("%s: Service %s has no port %d", u, svc.Name, port)
		return nil
	}
	var hits []*appsv1.StatefulSet
	for _, sts := range workspacesIn(s, svcNS) {
		if len(svc.Spec.Selector) > 0 && labelsSet(svc.Spec.Selector).AsSelector().Matches(labelsSet(sts.Spec.Template.Labels)) {
			hits = append(hits, sts)
		}
	}
	if len(hits) != 1 {
		p.add("%s: Service %s selects %d workspaces, not one", u, svc.Name, len(hits))
		return nil
	}
	sts := hits[0]
	if wp := workspacePort(sts, opts.Image); wp != nil && !serviceLeadsTo(*sp, *wp) {
		p.add("%s: port %d of Service %s does not lead to %s's agentmux port %d", u, port, svc.Name, sts.Name, wp.ContainerPort)
	}
	if u.Scheme != "http" {
		p.add("%s: the workspace serves plain http inside the cluster", u)
	}
	return sts
}

// checkOpensWorkspace: when the render has Ingresses, the host a browser
// opens a workspace at is served by one, and it leads to that workspace.
func checkOpensWorkspace(s *Set, ns string, open *url.URL, sts *appsv1.StatefulSet, p problems) {
	if isLocalhost(open.Hostname()) || !slices.ContainsFunc(s.Ingresses, func(i *networkingv1.Ingress) bool { return i.Namespace == ns }) {
		return
	}
	for _, ing := range s.Ingresses {
		if ing.Namespace != ns {
			continue
		}
		for _, rule := range ing.Spec.Rules {
			if rule.Host != open.Hostname() || rule.HTTP == nil {
				continue
			}
			for _, hp := range rule.HTTP.Paths {
				if hp.Backend.Service == nil || !strings.HasPrefix(open.EscapedPath()+"/", strings.TrimSuffix(hp.Path, "/")+"/") {
					continue
				}
				svc := findService(s, ns, hp.Backend.Service.Name)
				if svc == nil || len(svc.Spec.Selector) == 0 || !labelsSet(svc.Spec.Selector).AsSelector().Matches(labelsSet(sts.Spec.Template.Labels)) {
					p.add("%s opens %s, but Ingress %s sends that host to Service %s, which is not %s's", open, sts.Name, ing.Name, hp.Backend.Service.Name, sts.Name)
				}
				return
			}
		}
	}
	p.add("%s opens %s, but no Ingress serves the host %s", open, sts.Name, open.Hostname())
}

// DiscoverTarget is a --discover value: the A and AAAA records of Name,
// each a workspace at Port; or, when Service is set, the SRV records of
// _Service._Proto.Name.
type DiscoverTarget struct {
	Name           string
	Port           int
	Service, Proto string
}

// ParseDiscover reads a --discover value: dns:NAME:PORT or
// dns:_SERVICE._PROTO.NAME (SRV records carry their port).
func ParseDiscover(v string) (DiscoverTarget, error) {
	rest, ok := strings.CutPrefix(v, "dns:")
	if !ok {
		return DiscoverTarget{}, fmt.Errorf("%q: want dns:NAME:PORT or dns:_SERVICE._PROTO.NAME", v)
	}
	if strings.HasPrefix(rest, "_") {
		parts := strings.SplitN(rest, ".", 3)
		if len(parts) < 3 || len(parts[0]) < 2 || !strings.HasPrefix(parts[1], "_") || len(parts[1]) < 2 || parts[2] == "" || strings.Contains(rest, ":") {
			return DiscoverTarget{}, fmt.Errorf("%q: want dns:_SERVICE._PROTO.NAME, without a port", v)
		}
		return DiscoverTarget{Name: parts[2], Service: parts[0][1:], Proto: parts[1][1:]}, nil
	}
	name, portStr, err := net.SplitHostPort(rest)
	if err != nil || name == "" {
		return DiscoverTarget{}, fmt.Errorf("%q: want dns:NAME:PORT", v)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 1 || port > 65535 {
		return DiscoverTarget{}, fmt.Errorf("%q: port %q is not a port number", v, portStr)
	}
	return DiscoverTarget{Name: name, Port: port}, nil
}

// checkDiscovery checks the hub's --discover flags and returns the
// rendered workspaces they find, and whether the hub discovers.
func checkDiscovery(s *Set, d *appsv1.Deployment, c *corev1.Container, opts Options, p problems) (map[*appsv1.StatefulSet]bool, bool) {
	var values []string
	for _, v := range flagValues(c.Args, "discover") {
		for part := range strings.SplitSeq(v, ",") {
			if part = strings.TrimSpace(part); part != "" {
				values = append(values, part)
			}
		}
	}
	if len(values) == 0 {
		for _, f := range []string{"discover-token-file", "discover-open-url", "discover-every"} {
			if _, ok := flagValue(c.Args, f); ok {
				p.add("--%s without --discover does nothing", f)
			}
		}
		return nil, false
	}
	ns, pod := d.Namespace, &d.Spec.Template.Spec
	var tok secretKey
	haveTok := false
	if tf, ok := flagValue(c.Args, "discover-token-file"); ok {
		tok, haveTok = hubSecretFile(s, ns, pod, c, "--discover-token-file", tf, p)
	} else {
		p.add("--discover without --discover-token-file: the hub would ask the workspaces it finds without a token, and every workspace here requires one")
	}
	if v, ok := flagValue(c.Args, "discover-every"); ok {
		if every, err := time.ParseDuration(v); err != nil || every < time.Second {
			p.add("--discover-every %q is not a duration of at least 1s", v)
		}
	}
	workspaces := workspacesIn(s, ns)
	found := map[*appsv1.StatefulSet]bool{}
	for _, v := range values {
		dp := problems{fmt.Sprintf("%s: --discover %s", p.prefix, v), p.errs}
		t, err := ParseDiscover(v)
		if err != nil {
			dp.add("%v", err)
			continue
		}
		labels := strings.Split(t.Name, ".")
		svcNS := ns
		if len(labels) > 1 {
			svcNS = labels[1]
		}
		svc := findService(s, svcNS, labels[0])
		if svc == nil {
			dp.add("names Service %s in namespace %s, which is not among the rendered objects", labels[0], svcNS)
			continue
		}
		if svc.Spec.ClusterIP != corev1.ClusterIPNone {
			dp.add("Service %s is not headless (clusterIP: None): its name resolves to one virtual address, a different workspace at each connection, not to each workspace", svc.Name)
		}
		if len(svc.Spec.Selector) == 0 {
			dp.add("Service %s has no selector: its name resolves to no workspace", svc.Name)
			continue
		}
		sel := labelsSet(svc.Spec.Selector).AsSelector()
		for _, h := range s.Deployments {
			if h.Namespace == svcNS && sel.Matches(labelsSet(h.Spec.Template.Labels)) {
				dp.add("Service %s selects the pods of the hub %s: the hub would find itself", svc.Name, h.Name)
			}
		}
		var sp *corev1.ServicePort
		if t.Service != "" {
			for i := range svc.Spec.Ports {
				proto := svc.Spec.Ports[i].Protocol
				if proto == "" {
					proto = corev1.ProtocolTCP
				}
				if svc.Spec.Ports[i].Name == t.Service && strings.EqualFold(string(proto), t.Proto) {
					sp = &svc.Spec.Ports[i]
				}
			}
			if sp == nil {
				dp.add("Service %s has no %s port named %q: the SRV name has no records", svc.Name, strings.ToUpper(t.Proto), t.Service)
			}
		} else if len(workspaces) == 0 && !slices.ContainsFunc(svc.Spec.Ports, func(sp corev1.ServicePort) bool { return int(sp.Port) == t.Port }) {
			dp.add("Service %s has no port %d, the workspaces' port it is there to name", svc.Name, t.Port)
		}
		for _, sts := range workspacesIn(s, svcNS) {
			if !sel.Matches(labelsSet(sts.Spec.Template.Labels)) {
				continue
			}
			found[sts] = true
			wp := workspacePort(sts, opts.Image)
			switch {
			case wp == nil:
			case t.Service == "" && int(wp.ContainerPort) != t.Port:
				dp.add("finds %s at port %d, but it listens on %d", sts.Name, t.Port, wp.ContainerPort)
			// The SRV records of a headless Service carry a port; keep
			// the Service's port and its target the same, so that it is
			// the pods' whichever the DNS server gives.
			case sp != nil && (sp.Port != wp.ContainerPort || !serviceLeadsTo(*sp, *wp)):
				dp.add("port %q of Service %s is %d to %s; for SRV records both must be %s's port %d", sp.Name, svc.Name, sp.Port, sp.TargetPort.String(), sts.Name, wp.ContainerPort)
			}
			if wt, ok := workspaceToken(sts); ok && haveTok && wt != tok {
				dp.add("finds %s, which takes its token from %s, but the hub gives every workspace it finds %s: with a token each, list the workspaces in a peers file", sts.Name, wt, tok)
			}
		}
	}

	tmpl, ok := flagValue(c.Args, "discover-open-url")
	if !ok {
		p.add("--discover without --discover-open-url: the Open links would lead to the pods' addresses, which no browser reaches")
		return found, true
	}
	if checkOpenURL(strings.ReplaceAll(tmpl, "{name}", "workspace"), p) == nil {
		return found, true
	}
	var names []*appsv1.StatefulSet
	for sts := range found {
		names = append(names, sts)
	}
	slices.SortFunc(names, func(a, b *appsv1.StatefulSet) int { return strings.Compare(a.Name, b.Name) })
	if !strings.Contains(tmpl, "{name}") && len(names) > 1 {
		p.add("--discover-open-url %s has no {name}: every workspace would open at that one address", tmpl)
		return found, true
	}
	for _, sts := range names {
		u, err := url.Parse(strings.ReplaceAll(tmpl, "{name}", WorkspaceName(sts)))
		if err != nil {
			p.add("--discover-open-url %s for %s: %v", tmpl, sts.Name, err)
			continue
		}
		checkOpensWorkspace(s, ns, u, sts, problems{fmt.Sprintf("%s: --discover-open-url %s", p.prefix, tmpl), p.errs})
	}
	return found, true
}

// WorkspaceName is the name a workspace gives the hub, which
// --discover-open-url's {name} stands for: its --name, else
// AGENTMUX_NAME, else its hostname, which is its pod's name.
func WorkspaceName(sts *appsv1.StatefulSet) string {
	if c := findContainer(sts.Spec.Template.Spec.Containers, ContainerName); c != nil {
		if v, ok := flagValue(c.Args, "name"); ok {
			return v
		}
		if e := findEnv(c.Env, "AGENTMUX_NAME"); e != nil && e.ValueFrom == nil && e.Value != "" {
			return e.Value
		}
	}
	return sts.Name + "-0" // the StatefulSet's one pod
}

func checkHubService(s *Set, d *appsv1.Deployment, port *corev1.ContainerPort, p problems) {
	if port == nil {
		return
	}
	for _, svc := range s.Services {
		if svc.Namespace != d.Namespace || len(svc.Spec.Selector) == 0 ||
			!labelsSet(svc.Spec.Selector).AsSelector().Matches(labelsSet(d.Spec.Template.Labels)) {
			continue
		}
		for _, sp := range svc.Spec.Ports {
			if serviceLeadsTo(sp, *port) {
				return
			}
		}
	}
	p.add("no Service leads to the hub's port %d: its Ingress needs one", port.ContainerPort)
}

// checkHubNetworkPolicy: only the ingress controller reaches the hub, and
// the hub reaches the workspaces and DNS, and nothing else.
func checkHubNetworkPolicy(s *Set, d *appsv1.Deployment, port *corev1.ContainerPort, opts Options, p problems) {
	ns, podLabels := d.Namespace, d.Spec.Template.Labels
	type target struct {
		peer Peer
		port corev1.ContainerPort
		name string
	}
	var workspaces []target
	for _, sts := range workspacesIn(s, ns) {
		if wp := workspacePort(sts, opts.Image); wp != nil {
			workspaces = append(workspaces, target{Peer{Namespace: ns, PodLabels: sts.Spec.Template.Labels}, *wp, sts.Name})
		}
	}
	if len(workspaces) == 0 {
		if _, portStr, err := net.SplitHostPort(opts.Image.Addr); err == nil {
			n, _ := strconv.Atoi(portStr)
			workspaces = append(workspaces, target{Peer{Namespace: ns, PodLabels: WorkspacePodLabels},
				corev1.ContainerPort{Name: "http", ContainerPort: int32(n), Protocol: corev1.ProtocolTCP}, "the base's workspace"})
		}
	}

	in := selectingPolicies(s, ns, podLabels, networkingv1.PolicyTypeIngress, p)
	if len(in) == 0 {
		p.add("no NetworkPolicy of type Ingress selects the hub's pod (labels %v): anything in the cluster can reach its page and API", podLabels)
	} else if port != nil {
		checkIPBlocks(in, networkingv1.PolicyTypeIngress, p)
		if !Admits(in, ns, *port, opts.Controller) {
			p.add("the NetworkPolicies %s do not admit the ingress controller (%s) to the hub's port %d", policyNames(in), opts.Controller, port.ContainerPort)
		}
		intruders := []Peer{
			{Namespace: ns, PodLabels: map[string]string{"app.kubernetes.io/name": "intruder"}},
			{Namespace: "intruder", PodLabels: opts.Controller.PodLabels},
			{Namespace: opts.Controller.Namespace, NamespaceLabels: opts.Controller.NamespaceLabels, PodLabels: map[string]string{"app.kubernetes.io/name": "intruder"}},
		}
		for _, w := range workspaces {
			intruders = append(intruders, w.peer)
		}
		for _, intruder := range intruders {
			if Admits(in, ns, *port, intruder) {
				p.add("the NetworkPolicies %s admit %s to the hub; only the ingress controller may connect", policyNames(in), intruder)
			}
		}
	}

	out := selectingPolicies(s, ns, podLabels, networkingv1.PolicyTypeEgress, p)
	if len(out) == 0 {
		p.add("no NetworkPolicy of type Egress selects the hub's pod: it holds every workspace's token and could send them anywhere; let it reach the workspaces and DNS only")
		return
	}
	checkIPBlocks(out, networkingv1.PolicyTypeEgress, p)
	for _, w := range workspaces {
		if !AdmitsEgress(out, ns, w.port, w.peer) {
			p.add("the NetworkPolicies %s do not let the hub reach %s on port %d", policyNames(out), w.name, w.port.ContainerPort)
		}
	}
	for _, proto := range []corev1.Protocol{corev1.ProtocolUDP, corev1.ProtocolTCP} {
		if !AdmitsEgress(out, ns, corev1.ContainerPort{ContainerPort: 53, Protocol: proto}, opts.DNS) {
			p.add("the NetworkPolicies %s do not let the hub reach the cluster's DNS (%s) on port 53/%s: it could not resolve the workspaces' names", policyNames(out), opts.DNS, proto)
		}
	}
	if len(workspaces) > 0 {
		wp := workspaces[0].port
		for _, other := range []Peer{
			{Namespace: ns, PodLabels: map[string]string{"app.kubernetes.io/name": "intruder"}},
			{Namespace: "intruder", PodLabels: map[string]string{"app.kubernetes.io/name": "intruder"}},
		} {
			for _, port := range []corev1.ContainerPort{wp, {ContainerPort: 443, Protocol: corev1.ProtocolTCP}} {
				if AdmitsEgress(out, ns, port, other) {
					p.add("the NetworkPolicies %s let the hub out to %s on port %d; it should reach the workspaces and DNS only", policyNames(out), other, port.ContainerPort)
				}
			}
		}
	}
}

// workspacesIn are the rendered workspaces in namespace ns.
func workspacesIn(s *Set, ns string) []*appsv1.StatefulSet {
	var out []*appsv1.StatefulSet
	for _, sts := range s.StatefulSets {
		if sts.Namespace == ns {
			out = append(out, sts)
		}
	}
	return out
}

// workspaceToken is the Secret key a workspace takes its token from.
func workspaceToken(sts *appsv1.StatefulSet) (secretKey, bool) {
	c := findContainer(sts.Spec.Template.Spec.Containers, ContainerName)
	if c == nil {
		return secretKey{}, false
	}
	e := findEnv(c.Env, TokenEnv)
	if e == nil || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
		return secretKey{}, false
	}
	return secretKey{e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key}, true
}

// workspacePort is the container port a workspace's agentmux listens on,
// or nil (which checkWorkspace reports).
func workspacePort(sts *appsv1.StatefulSet, img Image) *corev1.ContainerPort {
	c := findContainer(sts.Spec.Template.Spec.Containers, ContainerName)
	if c == nil {
		return nil
	}
	_, portStr, err := net.SplitHostPort(effective(c, "addr", "AGENTMUX_ADDR", img.Addr))
	if err != nil {
		return nil
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil
	}
	for i := range c.Ports {
		if int(c.Ports[i].ContainerPort) == port {
			return &c.Ports[i]
		}
	}
	return nil
}

// serviceLeadsTo reports whether a Service port sends to the container
// port: its targetPort names or numbers it, or, without one, its port is
// the container's.
func serviceLeadsTo(sp corev1.ServicePort, port corev1.ContainerPort) bool {
	return portRefersTo(sp.TargetPort, port) || sp.TargetPort.IntValue() == 0 && sp.TargetPort.StrVal == "" && sp.Port == port.ContainerPort
}
