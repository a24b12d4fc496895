package observe

import (
	"slices"
	"testing"
)

func TestOrderAndCancel(t *testing.T) {
	var l List[int]
	var got []string
	rec := func(name string) func(int) {
		return func(v int) { got = append(got, name+string(rune('0'+v))) }
	}
	cancelA := l.Subscribe(rec("a"))
	l.Subscribe(rec("b"))
	cancelC := l.Subscribe(rec("c"))
	l.Notify(1)
	cancelA()
	cancelA() // twice is harmless
	l.Notify(2)
	cancelC()
	l.Notify(3)
	want := []string{"a1", "b1", "c1", "b2", "c2", "b3"}
	if !slices.Equal(got, want) {
		t.Fatalf("calls = %v, want %v", got, want)
	}
}

// An observer may subscribe or cancel from inside Notify without a
// deadlock; the change applies from the next value.
func TestChangeWhileNotifying(t *testing.T) {
	var l List[int]
	var got []int
	var cancelSelf func()
	cancelSelf = l.Subscribe(func(v int) {
		got = append(got, v)
		cancelSelf()
		l.Subscribe(func(v int) { got = append(got, 100+v) })
	})
	l.Notify(1)
	l.Notify(2)
	if want := []int{1, 102}; !slices.Equal(got, want) {
		t.Fatalf("calls = %v, want %v", got, want)
	}
}

func TestEmpty(t *testing.T) {
	var l List[string]
	l.Notify("nobody listens") // must not panic
}
