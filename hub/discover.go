package hub

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/agentmux/agentmux/internal/regfile"
)

// Resolver answers the DNS questions of discovery; *net.Resolver is one.
// Tests give one that asks a DNS server of their own.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
	LookupSRV(ctx context.Context, service, proto, name string) (string, []*net.SRV, error)
}

// defaultResolver is the system's, as a pod resolves a Service: through
// /etc/hosts and the cluster's DNS.
var defaultResolver Resolver = net.DefaultResolver

// Discovery is a DNS name whose records are workspaces: its A and AAAA
// records, each address a workspace at Port, or, for a name that begins
// with an underscore (_http._tcp.agentmux-workspaces), its SRV records,
// each target and port a workspace.
type Discovery struct {
	Name string
	// Port is the workspaces' port for A and AAAA records; 0 for SRV.
	Port int
}

// ParseDiscovery reads --discover's "dns:NAME:PORT" or "dns:_SERVICE._PROTO.NAME".
func ParseDiscovery(s string) (Discovery, error) {
	rest, ok := strings.CutPrefix(s, "dns:")
	if !ok {
		return Discovery{}, fmt.Errorf("--discover %q: want dns:NAME:PORT (A and AAAA records) or dns:_SERVICE._PROTO.NAME (SRV records)", s)
	}
	if strings.HasPrefix(rest, "_") {
		if strings.Contains(rest, ":") {
			return Discovery{}, fmt.Errorf("--discover %q: SRV records carry their port; give dns:%s without one", s, strings.Split(rest, ":")[0])
		}
		return Discovery{Name: rest}, nil
	}
	name, port, err := net.SplitHostPort(rest)
	if err != nil || name == "" {
		return Discovery{}, fmt.Errorf("--discover %q: want dns:NAME:PORT, the workspaces' port after the name", s)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return Discovery{}, fmt.Errorf("--discover %q: port %q is not 1..65535", s, port)
	}
	return Discovery{Name: name, Port: n}, nil
}

// String is the Discovery as --discover gives it.
func (d Discovery) String() string {
	if d.Port == 0 {
		return "dns:" + d.Name
	}
	return "dns:" + net.JoinHostPort(d.Name, strconv.Itoa(d.Port))
}

// resolve returns the workspaces the name's records give now, sorted. A
// name that does not exist gives none: a headless Service with no pod
// ready answers so.
func (d Discovery) resolve(ctx context.Context, r Resolver, tokenFile, openURL string) ([]Peer, error) {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	var addrs []string // host:port
	if d.Port == 0 {
		_, srvs, err := r.LookupSRV(ctx, "", "", d.Name)
		if notFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("SRV %s: %w", d.Name, err)
		}
		for _, srv := range srvs {
			ips, err := r.LookupIPAddr(ctx, srv.Target)
			if notFound(err) {
				continue // a target going as its pod does
			}
			if err != nil {
				return nil, fmt.Errorf("SRV %s: target %s: %w", d.Name, srv.Target, err)
			}
			for _, ip := range ips {
				addrs = append(addrs, net.JoinHostPort(ip.IP.String(), strconv.Itoa(int(srv.Port))))
			}
		}
	} else {
		ips, err := r.LookupIPAddr(ctx, d.Name)
		if notFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.Name, err)
		}
		for _, ip := range ips {
			addrs = append(addrs, net.JoinHostPort(ip.IP.String(), strconv.Itoa(d.Port)))
		}
	}
	slices.Sort(addrs)
	addrs = slices.Compact(addrs)
	peers := make([]Peer, len(addrs))
	for i, a := range addrs {
		peers[i] = Peer{URL: "http://" + a, TokenFile: tokenFile, OpenURL: openURL}
	}
	return peers, nil
}

// notFound reports a name with no records.
func notFound(err error) bool {
	var dnsErr *net.DNSError
	return errors.As(err, &dnsErr) && dnsErr.IsNotFound
}

// openURL is where a browser reaches the peer's UI, {name} replaced by
// the workspace's name.
func (p Peer) openURL(name string) string {
	if p.OpenURL == "" {
		return p.URL + "/"
	}
	return strings.ReplaceAll(p.OpenURL, "{name}", url.PathEscape(name))
}

// ParsePeerURL checks a workspace's address: http or https, a host, no
// query; the path it is served under is kept, without a trailing slash.
func ParsePeerURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	switch {
	case err != nil:
		return "", fmt.Errorf("workspace address %q: %w", raw, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("workspace address %q: want http:// or https://", raw)
	case u.Host == "":
		return "", fmt.Errorf("workspace address %q: no host", raw)
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return "", fmt.Errorf("workspace address %q: give scheme, host, port and path only", raw)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	return u.String(), nil
}

// maxPeersFile bounds the peers file: one line a workspace.
const maxPeersFile = 1 << 20

// ReadPeers reads a peers file: one workspace a line, "URL TOKEN-FILE
// [OPEN-URL]", TOKEN-FILE "-" for a workspace without a token; blank
// lines and lines beginning with # are skipped. A relative TOKEN-FILE is
// taken as it is, from the hub's directory.
func ReadPeers(name string) ([]Peer, error) {
	f, _, err := regfile.Open(name)
	if err != nil {
		return nil, fmt.Errorf("peers file: %w", err)
	}
	defer f.Close()
	var peers []Peer
	seen := map[string]int{}
	sc := bufio.NewScanner(f)
	read := 0
	for n := 1; sc.Scan(); n++ {
		read += len(sc.Bytes()) + 1
		if read > maxPeersFile {
			return nil, fmt.Errorf("peers file %s: over %d bytes", name, maxPeersFile)
		}
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 2 || len(fields) > 3 {
			return nil, fmt.Errorf("peers file %s:%d: want URL TOKEN-FILE [OPEN-URL], got %d fields", name, n, len(fields))
		}
		u, err := ParsePeerURL(fields[0])
		if err != nil {
			return nil, fmt.Errorf("peers file %s:%d: %w", name, n, err)
		}
		if first, dup := seen[u]; dup {
			return nil, fmt.Errorf("peers file %s:%d: %s is on line %d already", name, n, u, first)
		}
		seen[u] = n
		p := Peer{URL: u}
		if fields[1] != "-" {
			p.TokenFile = fields[1]
		}
		if len(fields) == 3 {
			open, err := ParsePeerURL(fields[2])
			if err != nil {
				return nil, fmt.Errorf("peers file %s:%d: the UI's %w", name, n, err)
			}
			p.OpenURL = open + "/"
		}
		peers = append(peers, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("peers file %s: %w", name, err)
	}
	return peers, nil
}
