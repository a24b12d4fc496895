package forge

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Kind is the kind of code host a remote's host is, told by its name.
type Kind int

// The kinds of code host ParseRemote tells apart.
const (
	KindUnknown Kind = iota
	KindGitHub
	KindGitLab
	KindBitbucket
	KindGitea // Gitea and Forgejo, Codeberg's
)

// Remote is a remote's URL taken apart: where its host's web pages are and
// the repository's path there. ship names a forge's pull request page from
// it, and RepoOf the repository GitHub's API is asked about, so the two
// read remote URLs alike.
type Remote struct {
	// Web is the host's web address: https://host, or http://host[:port]
	// for an http remote (an https remote keeps its port too; an ssh or
	// git one does not: that port is its ssh server's).
	Web string
	// Host is the host's name, lower case, with no port; a forge's ssh
	// name (ssh.github.com) is replaced by its web one (github.com).
	Host string
	// Path is the repository's path segments, unescaped, without .git.
	Path []string
	Kind Kind
}

// sshHosts are the names a forge's ssh is reached by (on port 443, past
// firewalls) that are not the name of its web pages.
var sshHosts = map[string]string{
	"ssh.github.com":       "github.com",
	"altssh.gitlab.com":    "gitlab.com",
	"altssh.bitbucket.org": "bitbucket.org",
}

// ParseRemote takes a remote's URL apart: https and http URLs, ssh:// and
// git:// ones, and scp-like ones ([user@]host:o/r.git), with or without
// .git; the user and password are dropped. It reports false for a local
// path, a URL that does not parse, an unknown scheme, or a path with an
// empty, ".", ".." or "~user" segment. Any host is taken; Kind says which
// forge it is known as.
func ParseRemote(remote string) (Remote, bool) {
	remote = strings.TrimSpace(remote)
	scheme, host, port, path := "", "", "", ""
	if i := strings.Index(remote, "://"); i >= 0 {
		u, err := url.Parse(remote)
		if err != nil {
			return Remote{}, false
		}
		scheme, host, port, path = strings.ToLower(u.Scheme), u.Hostname(), u.Port(), u.Path
		switch scheme {
		case "https", "http", "ssh", "git", "git+ssh", "ssh+git":
		default:
			return Remote{}, false
		}
	} else {
		// scp-like: [user@]host:path, with no slash before the colon
		// (which would make it a local path).
		colon := strings.Index(remote, ":")
		if colon <= 0 || strings.Contains(remote[:colon], "/") {
			return Remote{}, false
		}
		host, path = remote[:colon], remote[colon+1:]
		if at := strings.LastIndex(host, "@"); at >= 0 {
			host = host[at+1:]
		}
		scheme = "ssh"
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if web, ok := sshHosts[host]; ok {
		host = web
	}
	if host == "" {
		return Remote{}, false
	}
	segs := strings.Split(strings.TrimSuffix(strings.Trim(path, "/"), ".git"), "/")
	for _, s := range segs {
		if s == "" || s == "." || s == ".." || strings.HasPrefix(s, "~") {
			return Remote{}, false
		}
	}
	// An ssh port is the ssh server's, not the web's.
	web := "https://" + host
	switch scheme {
	case "http":
		web = "http://" + host
		if port != "" {
			web = "http://" + net.JoinHostPort(host, port)
		}
	case "https":
		if port != "" {
			web = "https://" + net.JoinHostPort(host, port)
		}
	}
	return Remote{Web: web, Host: host, Path: segs, Kind: kindOf(host)}, true
}

// kindOf tells the forge by the host's name: GitHub Enterprise hosts are
// usually named for it (github.example.com), as GitLab's and Gitea's are.
func kindOf(host string) Kind {
	switch {
	case strings.Contains(host, "github"):
		return KindGitHub
	case strings.Contains(host, "gitlab"):
		return KindGitLab
	case host == "bitbucket.org":
		return KindBitbucket
	case host == "codeberg.org", strings.Contains(host, "gitea"), strings.Contains(host, "forgejo"):
		return KindGitea
	}
	return KindUnknown
}

// Repo is a repository on GitHub and the API that serves it.
type Repo struct {
	Host  string // github.com, or an Enterprise host
	Owner string
	Name  string
	// API is the REST API's base URL, without a trailing slash:
	// https://api.github.com, https://<host>/api/v3, or the override.
	API string
}

// RepoOf names the GitHub repository a remote's URL points to (any form
// ParseRemote takes). apiOverride (--github-api), when not "", is the API's
// base URL and wins; otherwise github.com is served by
// https://api.github.com and any other host, an Enterprise server, by
// <web>/api/v3. A URL with no owner/name, a local path, or a host named
// for another forge (GitLab, Bitbucket, Gitea, Forgejo) is ErrNotGitHub.
func RepoOf(remoteURL, apiOverride string) (Repo, error) {
	rm, ok := ParseRemote(remoteURL)
	if !ok || len(rm.Path) != 2 {
		return Repo{}, fmt.Errorf("%w: %q is not a URL of owner/repository on a host", ErrNotGitHub, redactURL(remoteURL))
	}
	apiOverride = strings.TrimRight(strings.TrimSpace(apiOverride), "/")
	switch rm.Kind {
	case KindGitHub, KindUnknown:
		// A host named for no forge is taken for a GitHub Enterprise
		// server, as the remote's host is where Enterprise is reached;
		// one that is not answers the first request, in its words.
	default:
		return Repo{}, fmt.Errorf("%w: %s is another forge's host", ErrNotGitHub, rm.Host)
	}
	r := Repo{Host: rm.Host, Owner: rm.Path[0], Name: rm.Path[1], API: apiOverride}
	if r.API == "" {
		r.API = rm.Web + "/api/v3"
		if rm.Host == "github.com" {
			r.API = "https://api.github.com"
		}
	}
	return r, nil
}

// String is owner/name.
func (r Repo) String() string { return r.Owner + "/" + r.Name }

// graphQL is the GraphQL endpoint beside the REST API: api.github.com's is
// /graphql, an Enterprise server's /api/graphql beside /api/v3 (see
// docs.github.com/en/enterprise-server@latest/graphql/guides/forming-calls-with-graphql#the-graphql-endpoint).
func (r Repo) graphQL() string {
	if base, ok := strings.CutSuffix(r.API, "/api/v3"); ok {
		return base + "/api/graphql"
	}
	return r.API + "/graphql"
}

// redactURL drops a URL's user info and query, which can hold secrets
// (a token in https://x-access-token:T@github.com/o/r, a signature in a
// log's download URL). An scp-like remote's user is a login name.
func redactURL(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "(a URL that does not parse)"
	}
	u.User = nil
	u.RawQuery = ""
	u.Fragment = ""
	return u.String()
}
