package sessions

import (
	"slices"
	"testing"
	"time"
)

// The detector alone, without a run: a wait is said once, a permission
// is kept while its wait lasts, and waiting comes before idle.
func TestDetectorWaits(t *testing.T) {
	var d detector
	if !d.startWaiting(time.Now(), "test", true, false, nil) || d.startWaiting(time.Now(), "test", false, false, &Permission{Tool: "Bash"}) {
		t.Fatal("a second signal started a second wait")
	}
	if !d.atPrompt() || d.permissionAsked() != nil || d.runStatus() != StatusWaiting {
		t.Fatalf("waiting at the prompt: atPrompt %v, permission %+v, status %s", d.atPrompt(), d.permissionAsked(), d.runStatus())
	}
	if !d.endWaiting(time.Now()) || d.endWaiting(time.Now()) || d.isWaiting() || d.runStatus() != StatusActive {
		t.Fatal("the wait did not end once, and only once")
	}

	if !d.startWaiting(time.Now(), "test", false, false, &Permission{Tool: "Write", Summary: "a.go"}) || d.atPrompt() {
		t.Fatal("a permission request is a wait, and not at the prompt")
	}
	p := d.permissionAsked()
	p.Tool = "changed"
	if got := d.permissionAsked(); got == nil || *got != (Permission{Tool: "Write", Summary: "a.go"}) {
		t.Fatalf("permission %+v: the detector's own was changed or lost", got)
	}
	d.runEnded()
	if d.isWaiting() || d.permissionAsked() != nil {
		t.Fatal("a run's end left it waiting")
	}

	if !d.hook() || d.hook() || !d.isHooked() {
		t.Fatal("hook did not report the first call alone")
	}
	d.reset()
	if d.isHooked() || !d.hook() {
		t.Fatal("a new run kept the last run's hooks")
	}
}

// Silence makes a run idle, then earns one warning per limit, in order,
// unless it waits for its user; output or the user's answer starts the
// count again.
func TestDetectorSilence(t *testing.T) {
	tm := Timing{QuestionQuiet: time.Second, IdleAfter: time.Hour, WarnAfter: 2 * time.Hour, ErrorAfter: 3 * time.Hour}
	var d detector
	ago := func(d time.Duration) time.Time { return time.Now().Add(-d) }

	lastOut := ago(90 * time.Minute)
	quiet, resumed := d.heard(tm, lastOut)
	if quiet < 90*time.Minute || resumed {
		t.Fatalf("heard = %v, %v", quiet, resumed)
	}
	if idle, warnings := d.silent(tm, quiet); !idle || warnings != nil || d.runStatus() != StatusIdle {
		t.Fatalf("90 minutes of silence: idle %v, warnings %v, status %s; want idle alone", idle, warnings, d.runStatus())
	}
	if next, arm := d.next(tm, lastOut, quiet, false); next <= 29*time.Minute || next > 30*time.Minute || !arm {
		t.Fatalf("next = %v, arm %v; want the warning's deadline, 30 minutes on, and a wake on output", next, arm)
	}
	if idle, _ := d.silent(tm, quiet); idle {
		t.Fatal("went idle twice")
	}

	quiet, _ = d.heard(tm, ago(210*time.Minute))
	if _, warnings := d.silent(tm, quiet); !slices.Equal(warnings, []Severity{SeverityWarning, SeverityError}) {
		t.Fatalf("3.5 hours of silence: warnings %v, want a warning then an error", warnings)
	}
	if _, warnings := d.silent(tm, quiet); warnings != nil {
		t.Fatalf("warned again: %v", warnings)
	}

	lastOut = time.Now()
	if quiet, resumed = d.heard(tm, lastOut); !resumed || d.runStatus() != StatusActive {
		t.Fatal("output did not end idleness")
	}
	if next, arm := d.next(tm, lastOut, quiet, true); next > time.Second || arm {
		t.Fatalf("next = %v, arm %v; want the question's deadline and no wake", next, arm)
	}

	d.startWaiting(time.Now(), "test", true, false, nil)
	if idle, warnings := d.silent(tm, 4*time.Hour); !idle || warnings != nil || d.runStatus() != StatusWaiting {
		t.Fatalf("silent while waiting: idle %v, warnings %v, status %s; want idle, no warning, waiting", idle, warnings, d.runStatus())
	}
	d.endWaiting(time.Now())
	if quiet, _ := d.heard(tm, ago(4*time.Hour)); quiet > time.Minute {
		t.Fatalf("quiet %v after the user answered, want it counted from the answer", quiet)
	}
}
