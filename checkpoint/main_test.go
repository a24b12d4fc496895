package checkpoint

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The tests' gits, and the package's, read no user or system config:
	// a developer's aliases, hooks path or default branch would change
	// what they do. Each repository names its own user.
	os.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	os.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	goleak.VerifyTestMain(m)
}
