package ship

import "testing"

// TestPullRequestURL: each forge's page from each form of remote URL;
// credentials never carried over; unknown hosts and local paths give "".
func TestPullRequestURL(t *testing.T) {
	t.Parallel()
	const gh = "https://github.com/o/r/compare/main...feat?expand=1"
	for _, tc := range []struct {
		remote, branch, base, want string
	}{
		// GitHub, every form.
		{"https://github.com/o/r.git", "feat", "main", gh},
		{"https://github.com/o/r", "feat", "main", gh},
		{"https://github.com/o/r/", "feat", "main", gh},
		{"https://x-access-token:secret@github.com/o/r.git", "feat", "main", gh},
		{"git@github.com:o/r.git", "feat", "main", gh},
		{"github.com:o/r", "feat", "main", gh},
		{"ssh://git@github.com/o/r.git", "feat", "main", gh},
		{"ssh://git@github.com:22/o/r.git", "feat", "main", gh},
		{"ssh://git@ssh.github.com:443/o/r.git", "feat", "main", gh},
		{"git://github.com/o/r.git", "feat", "main", gh},
		{"HTTPS://GitHub.com/o/r.git", "feat", "main", gh},
		{"https://github.com/o/r.git", "feature/auth", "release/1.0", "https://github.com/o/r/compare/release/1.0...feature/auth?expand=1"},
		{"https://github.com/o/r.git", "fix#1 ü", "main", "https://github.com/o/r/compare/main...fix%231%20%C3%BC?expand=1"},
		{"https://github.com/o/r.git", "feat", "", "https://github.com/o/r/compare/feat?expand=1"},
		{"https://github.example.com:8443/team/app.git", "feat", "main", "https://github.example.com:8443/team/app/compare/main...feat?expand=1"},
		{"http://github.internal/o/r.git", "feat", "main", "http://github.internal/o/r/compare/main...feat?expand=1"},

		// GitLab, subgroups included.
		{"git@gitlab.com:g/sub/r.git", "feat", "main", "https://gitlab.com/g/sub/r/-/merge_requests/new?merge_request%5Bsource_branch%5D=feat&merge_request%5Btarget_branch%5D=main"},
		{"https://oauth2:tok@gitlab.example.org/g/r", "a/b", "", "https://gitlab.example.org/g/r/-/merge_requests/new?merge_request%5Bsource_branch%5D=a%2Fb"},
		{"ssh://git@altssh.gitlab.com:443/g/r.git", "feat", "main", "https://gitlab.com/g/r/-/merge_requests/new?merge_request%5Bsource_branch%5D=feat&merge_request%5Btarget_branch%5D=main"},

		// Bitbucket.
		{"git@bitbucket.org:team/repo.git", "feat", "main", "https://bitbucket.org/team/repo/pull-requests/new?dest=main&source=feat"},
		{"https://someone@bitbucket.org/team/repo.git", "feat", "", "https://bitbucket.org/team/repo/pull-requests/new?source=feat"},

		// Gitea and Forgejo.
		{"git@codeberg.org:o/r.git", "feat", "main", "https://codeberg.org/o/r/compare/main...feat"},
		{"https://gitea.example.com/o/r.git", "feat", "main", "https://gitea.example.com/o/r/compare/main...feat"},
		{"ssh://git@forgejo.example.net:2222/o/r.git", "feat", "dev", "https://forgejo.example.net/o/r/compare/dev...feat"},

		// No forge, or no pull request to make.
		{"https://example.com/o/r.git", "feat", "main", ""},
		{"git@example.com:o/r.git", "feat", "main", ""},
		{"/srv/git/r.git", "feat", "main", ""},
		{"./r.git", "feat", "main", ""},
		{"file:///srv/github/o/r.git", "feat", "main", ""},
		{"ext::ssh github.com o/r", "feat", "main", ""},
		{"", "feat", "main", ""},
		{"https://github.com/o", "feat", "main", ""},
		{"https://github.com/o/r/extra", "feat", "main", ""},
		{"https://github.com/o/../r", "feat", "main", ""},
		{"https://github.com/o/r.git", "main", "main", ""},
		{"https://github.com/o/r.git", "", "main", ""},
		{"https://bitbucket.example.com/o/r.git", "feat", "main", ""},
	} {
		if got := PullRequestURL(tc.remote, tc.branch, tc.base); got != tc.want {
			t.Errorf("PullRequestURL(%q, %q, %q) = %q, want %q", tc.remote, tc.branch, tc.base, got, tc.want)
		}
	}
}
