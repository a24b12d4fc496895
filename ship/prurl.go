package ship

import (
	"net/url"
	"strings"

	"github.com/agentmux/agentmux/forge"
)

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
	if kind == forge.KindUnknown {
		return ""
	}
	page := web + "/" + repo
	switch kind {
	case forge.KindGitHub:
		return page + "/compare/" + compareRange(branch, base) + "?expand=1"
	case forge.KindGitLab:
		q := url.Values{"merge_request[source_branch]": {branch}}
		if base != "" {
			q.Set("merge_request[target_branch]", base)
		}
		return page + "/-/merge_requests/new?" + q.Encode()
	case forge.KindBitbucket:
		q := url.Values{"source": {branch}}
		if base != "" {
			q.Set("dest", base)
		}
		return page + "/pull-requests/new?" + q.Encode()
	case forge.KindGitea:
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
// segments) and its forge; forge.KindUnknown when it is none, or the URL
// is a local path or does not parse. The URL is read by forge.ParseRemote,
// as forge.RepoOf reads it for GitHub's API.
func parseRemote(remote string) (web, repo string, kind forge.Kind) {
	rm, ok := forge.ParseRemote(remote)
	if !ok || rm.Kind == forge.KindUnknown {
		return "", "", forge.KindUnknown
	}
	// owner/repo; GitLab's groups nest: group/subgroup/project.
	if len(rm.Path) < 2 || rm.Kind != forge.KindGitLab && len(rm.Path) > 2 {
		return "", "", forge.KindUnknown
	}
	segs := make([]string, len(rm.Path))
	for i, s := range rm.Path {
		segs[i] = url.PathEscape(s)
	}
	return rm.Web, strings.Join(segs, "/"), rm.Kind
}

// escapePath escapes a branch name for a URL's path, keeping its slashes.
func escapePath(name string) string {
	segs := strings.Split(name, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}
