package ports

import (
	"slices"
	"testing"
)

// TestBound: of thousands of ports, a listing keeps the sessions' first
// and the lowest others, at or above the lowest port, at most MaxListed,
// lowest first, and counts the rest.
func TestBound(t *testing.T) {
	var list []Port
	for p := 1; p <= 5000; p++ {
		port := Port{Port: p * 10}
		if p%1000 == 0 { // 10000, 20000, ... 50000
			port.SessionID = "s-" + string(rune('a'+p/1000))
		}
		list = append(list, port)
	}
	got := Bound(list, 1024)
	if len(got.Ports) != MaxListed {
		t.Fatalf("%d ports listed, want %d", len(got.Ports), MaxListed)
	}
	// Ports 10..1020 are below 1024: not listed, not counted.
	if want := 5000 - 102 - MaxListed; got.More != want {
		t.Errorf("%d more, want %d", got.More, want)
	}
	var want []int
	for p := 1030; len(want) < MaxListed-5; p += 10 {
		want = append(want, p)
	}
	want = append(want, 10000, 20000, 30000, 40000, 50000)
	var ports []int
	for _, p := range got.Ports {
		ports = append(ports, p.Port)
	}
	if !slices.Equal(ports, want) {
		t.Errorf("listed %v,\nwant %v", ports, want)
	}

	small := Bound([]Port{{Port: 22}, {Port: 5173, PID: 4}}, 1024)
	if !small.Equal(Listing{Ports: []Port{{Port: 5173, PID: 4}}}) {
		t.Errorf("a short list: %+v", small)
	}
	if none := Bound(nil, 1024); none.Ports == nil || len(none.Ports) != 0 || none.More != 0 {
		t.Errorf("no ports: %+v, want an empty list, not nil", none)
	}

	// More sessions' ports than room: the lowest of them.
	var many []Port
	for p := 2000; p < 2000+2*MaxListed; p++ {
		many = append(many, Port{Port: p, SessionID: "s"})
	}
	many = append([]Port{{Port: 1500}}, many...)
	got = Bound(many, 1024)
	if len(got.Ports) != MaxListed || got.Ports[0].Port != 2000 || got.Ports[MaxListed-1].Port != 2000+MaxListed-1 || got.More != MaxListed+1 {
		t.Errorf("sessions over the bound: %d listed, %d..%d, %d more", len(got.Ports), got.Ports[0].Port, got.Ports[len(got.Ports)-1].Port, got.More)
	}
}

// TestDiff: what is added, replaced and removed between two listings.
func TestDiff(t *testing.T) {
	vite := Port{Port: 5173, PID: 40, Command: "node", SessionID: "a"}
	viteB := Port{Port: 5173, PID: 41, Command: "node", SessionID: "b"}
	api := Port{Port: 8080, PID: 50, Command: "go"}
	db := Port{Port: 5432, PID: 60, Command: "postgres"}
	for _, c := range []struct {
		name     string
		from, to []Port
		added    []Port
		removed  []int
	}{
		{"nothing", nil, nil, []Port{}, []int{}},
		{"same", []Port{vite, api}, []Port{vite, api}, []Port{}, []int{}},
		{"first", nil, []Port{vite, api}, []Port{vite, api}, []int{}},
		{"all gone", []Port{vite, api}, nil, []Port{}, []int{5173, 8080}},
		{"added between", []Port{vite, api}, []Port{vite, db, api}, []Port{db}, []int{}},
		{"removed between", []Port{vite, db, api}, []Port{vite, api}, []Port{}, []int{5432}},
		{"replaced", []Port{vite, api}, []Port{viteB, api}, []Port{viteB}, []int{}},
		{"all at once", []Port{vite, db}, []Port{viteB, api}, []Port{viteB, api}, []int{5432}},
	} {
		added, removed := Diff(c.from, c.to)
		if !slices.Equal(added, c.added) || !slices.Equal(removed, c.removed) || added == nil || removed == nil {
			t.Errorf("%s: added %v, removed %v; want %v, %v", c.name, added, removed, c.added, c.removed)
		}
	}
}
