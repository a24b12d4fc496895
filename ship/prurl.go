package ship

import (
	"net"
	"net/url"
	"strings"
)

// forge is a kind of code host, told by its name.
type forge int

const (
	noForge forge = iota
	github
	gitlab
	bitbucket
	gitea // Gitea and Forgejo, Codeberg's
)

// sshHosts are the names a forge's ssh is reached by (on port 443, past
// firewalls) that are not the name of its web pages.
var sshHosts = map[string]string{
	"ssh.github.com":       "github.com",
	"altssh.gitlab.com":    "gitlab.com",
	"altssh.bitbucket.org": "bitbucket.org",
}

// PullRequestURL returns the page of the forge a remote's URL points to
// that opens a pull (or merge) request of branch into base, or "" when
// the URL is no forge's that the function knows: GitHub (github.com, or
// a host whose name holds "github", as GitHub Enterprise's do), GitLab
// (a host whose name holds "gitlab"), Bitbucket (bitbucket.org), Gitea
// and Forgejo (codeberg.org, or a host whose name holds "gitea" or
// "forgejo"). It takes https and http URLs, ssh:// and git:// ones, and
// scp-like ones (git@github.com:o/r.git), with or without .git; the page
// is on https, or on http for an http remote, and never carries the
// URL's user or password. An empty base leaves it to the forge (its
// default branch); branch equal to base gives "".
func PullRequestURL(remoteURL, branch, base string) string {
	if branch == "" || branch == base {
		return ""
	}
	web, repo, kind := parseRemote(remoteURL)
	if kind == noForge {
		return ""
	}
	page := web + "/" + repo
	switch kind {
	case github:
		return page + "/compare/" + compareRange(branch, base) + "?expand=1"
	case gitlab:
		q := url.Values{"merge_request[source_branch]": {branch}}
		if base != "" {
			q.Set("merge_request[target_branch]", base)
		}
		return page + "/-/merge_requests/new?" + q.Encode()
	case bitbucket:
		q := url.Values{"source": {branch}}
		if base != "" {
			q.Set("dest", base)
		}
		return page + "/pull-requests/new?" + q.Encode()
	case gitea:
		return page + "/compare/" + compareRange(branch, base)
	}
	return ""
}

// compareRange is the base...branch part of a compare page's path, or
// the branch alone for the forge's default base.
func compareRange(branch, base string) string {
	if base == "" {
		return escapePath(branch)
	}
	return escapePath(base) + "..." + escapePath(branch)
}

// parseRemote returns the web address of the host a remote URL names
// (https://host), the repository's path on it (owner/repo, with escaped
// segments) and its forge; noForge when it is none, or the URL is a
// local path or does not parse.
func parseRemote(remote string) (web, repo string, kind forge) {
	remote = strings.TrimSpace(remote)
	scheme, host, port, path := "", "", "", ""
	if i := strings.Index(remote, "://"); i >= 0 {
		u, err := url.Parse(remote)
		if err != nil {
			return "", "", noForge
		}
		scheme, host, port, path = strings.ToLower(u.Scheme), u.Hostname(), u.Port(), u.Path
		switch scheme {
		case "https", "http", "ssh", "git", "git+ssh", "ssh+git":
		default:
			return "", "", noForge
		}
	} else {
		// scp-like: [user@]host:path, with no slash before the colon
		// (which would make it a local path).
		colon := strings.Index(remote, ":")
		if colon <= 0 || strings.Contains(remote[:colon], "/") {
			return "", "", noForge
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
	if kind = forgeOf(host); kind == noForge {
		return "", "", noForge
	}
	segs := strings.Split(strings.TrimSuffix(strings.Trim(path, "/"), ".git"), "/")
	// owner/repo; GitLab's groups nest: group/subgroup/project.
	if len(segs) < 2 || kind != gitlab && len(segs) > 2 {
		return "", "", noForge
	}
	for i, s := range segs {
		if s == "" || s == "." || s == ".." || strings.HasPrefix(s, "~") {
			return "", "", noForge
		}
		segs[i] = url.PathEscape(s)
	}
	// An ssh port is the ssh server's, not the web's.
	web = "https://" + host
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
	return web, strings.Join(segs, "/"), kind
}

// forgeOf tells the forge by the host's name.
func forgeOf(host string) forge {
	switch {
	case host == "":
		return noForge
	case strings.Contains(host, "github"):
		return github
	case strings.Contains(host, "gitlab"):
		return gitlab
	case host == "bitbucket.org":
		return bitbucket
	case host == "codeberg.org", strings.Contains(host, "gitea"), strings.Contains(host, "forgejo"):
		return gitea
	}
	return noForge
}

// escapePath escapes a branch name for a URL's path, keeping its slashes.
func escapePath(name string) string {
	segs := strings.Split(name, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}
