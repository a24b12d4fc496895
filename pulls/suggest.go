package pulls

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentmux/agentmux/internal/clip"
	"github.com/agentmux/agentmux/internal/textrule"
	"github.com/agentmux/agentmux/review"
	"github.com/agentmux/agentmux/scripts"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/ship"
)

// Bounds of a suggestion: GitHub takes a title of 256 characters and a
// body of 65536.
const (
	maxTitle        = 200
	maxBody         = 32 << 10
	maxReviewQuoted = 20
	maxCheckOutput  = 2 << 10
)

// suggestTitle is the branch's one commit's subject, or its name made a
// phrase (feat/login-form: "Feat login form").
func suggestTitle(bc ship.BranchCommits) string {
	if len(bc.Commits) == 1 && bc.More == 0 && bc.Commits[0].Subject != "" {
		return clip.String(textrule.Plain(bc.Commits[0].Subject), maxTitle, "…")
	}
	words := strings.FieldsFunc(bc.Branch, func(r rune) bool { return r == '-' || r == '_' || r == '/' || r == '.' })
	title := strings.Join(words, " ")
	if r, size := utf8.DecodeRuneInString(title); size > 0 {
		title = string(unicode.ToUpper(r)) + title[size:]
	}
	return clip.String(textrule.Plain(title), maxTitle, "…")
}

// suggestBody lists the branch's commits, the review comments that were
// sent to the agent, and the last turn's check.
func suggestBody(bc ship.BranchCommits, sent []review.Comment, check *sessions.Check) string {
	var b strings.Builder
	if len(bc.Commits) > 0 {
		b.WriteString("## Commits\n\n")
		for _, c := range bc.Commits {
			fmt.Fprintf(&b, "- %s\n", textrule.Plain(c.Subject))
		}
		if bc.More > 0 {
			fmt.Fprintf(&b, "- and %d more\n", bc.More)
		}
	}
	if len(sent) > 0 {
		b.WriteString("\n## Review comments addressed\n\n")
		for i, cm := range sent {
			if i == maxReviewQuoted {
				fmt.Fprintf(&b, "- and %d more\n", len(sent)-i)
				break
			}
			where := fmt.Sprintf("%s:%d", cm.Path, cm.Line)
			if cm.EndLine > cm.Line {
				where = fmt.Sprintf("%s:%d-%d", cm.Path, cm.Line, cm.EndLine)
			}
			text := strings.Join(strings.Fields(textrule.Plain(cm.Text)), " ")
			fmt.Fprintf(&b, "- `%s`: %s\n", where, clip.String(text, 300, "…"))
		}
	}
	if check != nil && check.Status != "" {
		b.WriteString("\n## Check\n\n")
		switch check.Status {
		case scripts.Passed:
			fmt.Fprintf(&b, "The workspace's check passed on the last turn (in %.1f s).\n", float64(check.DurationMs)/1000)
		default:
			fmt.Fprintf(&b, "The workspace's check on the last turn: %s (exit code %d).\n", check.Status, check.ExitCode)
			if out := strings.TrimSpace(textrule.Plain(check.Output)); out != "" {
				fmt.Fprintf(&b, "\n```\n%s\n```\n", clip.Tail(out, maxCheckOutput, "…"))
			}
		}
	}
	b.WriteString("\nOpened from agentmux.\n")
	return clip.String(strings.TrimLeft(b.String(), "\n"), maxBody, "\n…")
}
