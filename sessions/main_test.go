package sessions

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(envPasteEditor) != "" {
		// The test binary started as a stand-in agent (editor_test.go).
		os.Exit(runPasteEditor())
	}
	goleak.VerifyTestMain(m)
}
