package ratelog

import (
	"testing"
	"time"
)

func TestLimiter(t *testing.T) {
	l := Limiter{Every: time.Hour}
	if ok, n := l.Allow(); !ok || n != 0 {
		t.Fatalf("first line: %v, %d; want allowed with none left out", ok, n)
	}
	for i := range 5 {
		if ok, _ := l.Allow(); ok {
			t.Fatalf("line %d within the interval was allowed", i+2)
		}
	}
	l.last = l.last.Add(-2 * time.Hour) // the interval has passed
	if ok, n := l.Allow(); !ok || n != 5 {
		t.Fatalf("after the interval: %v, %d; want allowed, 5 left out", ok, n)
	}
	var zero Limiter
	for range 3 {
		if ok, _ := zero.Allow(); !ok {
			t.Fatal("the zero Limiter left a line out")
		}
	}
}
