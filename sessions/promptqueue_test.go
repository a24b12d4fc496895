package sessions

import (
	"bytes"
	"errors"
	"testing"
)

// The prompt queue part alone, without a run: keys held for a waking run
// come before an Enter under way, each bound refuses whole, and an
// interrupt drops both and makes the queue sit out one wait.
func TestPromptQueueHoldsInOrder(t *testing.T) {
	pq := promptQueue{id: "s1"}
	if held, err := pq.holdBehind([]byte("x")); held || err != nil {
		t.Fatalf("nothing waits, yet the input was held (%v, %v)", held, err)
	}

	first, err := pq.hold([]byte("ab"))
	if !first || err != nil {
		t.Fatalf("first held keys: first %v, err %v", first, err)
	}
	if first, err = pq.hold([]byte("c")); first || err != nil {
		t.Fatalf("second held keys: first %v, err %v", first, err)
	}
	ty := &typing{what: "queued prompt p1"}
	pq.startTyping(ty)
	if held, err := pq.holdBehind([]byte("d")); !held || err != nil {
		t.Fatalf("input typed while keys are held was not held (%v, %v)", held, err)
	}
	if len(ty.after) != 0 {
		t.Fatalf("input went behind the Enter (%q) while keys were held for the run", ty.after)
	}
	if _, err := pq.hold(make([]byte, MaxHeldInput)); !errors.Is(err, ErrInputFull) {
		t.Fatalf("keys past MaxHeldInput: err %v, want ErrInputFull", err)
	}
	if got := pq.dropHeld(); !bytes.Equal(got, []byte("abcd")) || pq.holding() {
		t.Fatalf("dropped %q (holding %v), want the keys in order, abcd, and none left", got, pq.holding())
	}

	if held, err := pq.holdBehind([]byte("e")); !held || err != nil || !bytes.Equal(ty.after, []byte("e")) {
		t.Fatalf("input typed while an Enter waits: held %v, err %v, behind it %q", held, err, ty.after)
	}
	if _, err := pq.holdTyped(make([]byte, MaxHeldInput)); !errors.Is(err, ErrInputFull) || !bytes.Equal(ty.after, []byte("e")) {
		t.Fatalf("input past MaxHeldInput behind the Enter: err %v, behind it %q", err, ty.after)
	}
	if _, ok := pq.next(); ok {
		t.Fatal("next offered a prompt while an Enter waits to submit")
	}
	if after := pq.endTyping(ty); !bytes.Equal(after, []byte("e")) || pq.isTyping(ty) {
		t.Fatalf("endTyping returned %q (still typing %v)", after, pq.isTyping(ty))
	}

	pq.startTyping(ty)
	if _, err := pq.hold([]byte("f")); err != nil {
		t.Fatal(err)
	}
	pq.interrupt()
	if pq.holding() || pq.isTyping(ty) {
		t.Fatal("an interrupt left held keys or the Enter under way")
	}
	if !pq.sitsOut() || pq.sitsOut() {
		t.Fatal("after an interrupt the queue must sit out one wait, and one only")
	}
}

// Queued prompts leave in order, each change counted, and only their
// author may take one back.
func TestPromptQueueOrderAndOwners(t *testing.T) {
	pq := promptQueue{id: "s1"}
	alice, bob := Author{ID: "a", Name: "alice"}, Author{ID: "b", Name: "bob"}
	p1, q, pos, err := pq.add(alice, "one")
	if err != nil || pos != 1 || q.Rev != 1 {
		t.Fatalf("first prompt: position %d, rev %d, err %v", pos, q.Rev, err)
	}
	p2, _, pos, err := pq.add(bob, "two")
	if err != nil || pos != 2 {
		t.Fatalf("second prompt: position %d, err %v", pos, err)
	}
	if _, _, err := pq.remove(bob.ID, p1.ID, false); !errors.Is(err, ErrNotQueueOwner) {
		t.Fatalf("bob removing alice's prompt: err %v, want ErrNotQueueOwner", err)
	}
	if next, ok := pq.next(); !ok || next.ID != p1.ID {
		t.Fatalf("next is %+v (%v), want the oldest", next, ok)
	}
	if q := pq.delivered(); len(q.Prompts) != 1 || q.Prompts[0].ID != p2.ID || q.Rev != 3 {
		t.Fatalf("after delivery: %+v, want bob's prompt alone at rev 3", q)
	}
	before := pq.snapshot()
	if _, q, err := pq.remove(bob.ID, p2.ID, false); err != nil || len(q.Prompts) != 0 || q.Rev != 4 {
		t.Fatalf("bob removing his prompt: %+v, err %v", q, err)
	}
	if len(before.Prompts) != 1 || before.Prompts[0].ID != p2.ID {
		t.Fatalf("a snapshot changed after it was taken: %+v", before)
	}
}
