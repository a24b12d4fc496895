package output

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

// waitTimeout bounds every wait for a writer held by its pacers.
const waitTimeout = 10 * time.Second

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
