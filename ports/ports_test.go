package ports

import (
	"bufio"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentmux/agentmux/internal/procfs"
	"github.com/agentmux/agentmux/internal/testutil"
)

// envListen makes a run of this test binary a listener for the tests: it
// listens on 127.0.0.1, prints the port and waits to be killed.
const envListen = "PORTS_TEST_LISTEN"

// envListeners, set to a count, makes a run of this test binary hold that
// many listeners for the benchmarks (testutil.HoldListeners).
const envListeners = "PORTS_TEST_LISTENERS"

func TestMain(m *testing.M) {
	if os.Getenv(envListen) != "" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			os.Exit(2)
		}
		os.Stdout.WriteString(strconv.Itoa(ln.Addr().(*net.TCPAddr).Port) + "\n")
		select {}
	}
	if n, err := strconv.Atoi(os.Getenv(envListeners)); err == nil {
		testutil.HoldListeners(n)
	}
	goleak.VerifyTestMain(m)
}

// TestParseTable: only listening sockets on loopback or every address
// count, in both tables' spellings.
func TestParseTable(t *testing.T) {
	const tcp = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1435 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 101 1 0 100 0 0 10 0
   1: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 102 1 0 100 0 0 10 0
   2: 0500000A:0BB8 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 103 1 0 100 0 0 10 0
   3: 0100007F:1436 0100007F:BA2C 01 00000000:00000000 00:00000000 00000000  1000        0 104 1 0 100 0 0 10 0
   4: 0100007F:0000 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 105 1 0 100 0 0 10 0
`
	const tcp6 = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:2328 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 201 1 0 100 0 0 10 0
   1: 00000000000000000000000000000000:2329 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 202 1 0 100 0 0 10 0
   2: 0000000000000000FFFF00000100007F:232A 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 203 1 0 100 0 0 10 0
   3: 000080FE00000000FF005452A6F0E4FE:232B 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 204 1 0 100 0 0 10 0
`
	got := make(map[uint64]int)
	for _, table := range []string{tcp, tcp6} {
		if err := parseTable(strings.NewReader(table), got); err != nil {
			t.Fatal(err)
		}
	}
	want := map[uint64]int{101: 5173, 102: 8080, 201: 9000, 202: 9001, 203: 9002}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for inode, port := range want {
		if got[inode] != port {
			t.Errorf("inode %d: port %d, want %d (all: %v)", inode, got[inode], port, got)
		}
	}
}

// TestListFindsAProcessAndItsSession: a real process listening on the
// loopback address is listed with its pid, command and session; this
// process's own listener is not.
func TestListFindsAProcessAndItsSession(t *testing.T) {
	own, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	ownPort := own.Addr().(*net.TCPAddr).Port

	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envListen+"=1", sessionEnv+"5b0c7c1e-2f43-4d8e-9a51-0e6f3c2a9b17")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}

	var found Port
	l := NewLister(procfs.Root, os.Getpid())
	testutil.Eventually(t, 10*time.Second, "the child's port to be listed", func() bool {
		list, err := l.List()
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(list, func(p Port) bool { return p.Port == ownPort }) {
			t.Fatalf("the listing holds this process's own port %d: %+v", ownPort, list)
		}
		i := slices.IndexFunc(list, func(p Port) bool { return p.Port == port })
		if i >= 0 {
			found = list[i]
		}
		return i >= 0
	})
	// comm is the executable's name, cut at 15 bytes.
	name := filepath.Base(os.Args[0])
	if found.PID != cmd.Process.Pid || found.Command != name[:min(len(name), 15)] ||
		found.SessionID != "5b0c7c1e-2f43-4d8e-9a51-0e6f3c2a9b17" {
		t.Fatalf("port %d listed as %+v, want pid %d, command %q, its session", port, found, cmd.Process.Pid, name)
	}
}

// TestListerRemembersOwners: a socket's process, once found, is not
// looked for again while the process is there (the walk through every
// process's descriptors is what a listing costs); once it has gone, or
// for a new socket, it is. The tree is a fixture laid out as /proc.
func TestListerRemembersOwners(t *testing.T) {
	root := t.TempDir()
	table := func(rows ...string) {
		t.Helper()
		head := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
		testutil.WriteFile(t, root, "net/tcp", head+strings.Join(rows, ""))
	}
	process := func(pid, comm, inode string) {
		t.Helper()
		testutil.WriteFile(t, root, pid+"/stat", pid+" ("+comm+") S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 0 0 0\n")
		testutil.WriteFile(t, root, pid+"/environ", sessionEnv+"s-"+pid+"\x00")
		if err := os.MkdirAll(filepath.Join(root, pid, "fd"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("socket:["+inode+"]", filepath.Join(root, pid, "fd", "3")); err != nil {
			t.Fatal(err)
		}
	}
	const vite = "   0: 0100007F:1435 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 101 1 0 100 0 0 10 0\n"
	const api = "   1: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 102 1 0 100 0 0 10 0\n"
	table(vite)
	process("40", "vite", "101")
	l := NewLister(root, 1)
	list := func(want ...Port) {
		t.Helper()
		got, err := l.List()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("listed %+v, want %+v", got, want)
		}
	}
	list(Port{Port: 5173, PID: 40, Command: "vite", SessionID: "s-40"})

	// Its descriptor no longer says so, but the process is there: the
	// owner found before stands, without a walk that would miss it.
	if err := os.Remove(filepath.Join(root, "40", "fd", "3")); err != nil {
		t.Fatal(err)
	}
	list(Port{Port: 5173, PID: 40, Command: "vite", SessionID: "s-40"})

	// A new socket is looked for.
	table(vite, api)
	process("41", "node", "102")
	list(Port{Port: 5173, PID: 40, Command: "vite", SessionID: "s-40"}, Port{Port: 8080, PID: 41, Command: "node", SessionID: "s-41"})

	// The process gone, its socket is looked for again: another holds it.
	if err := os.RemoveAll(filepath.Join(root, "40")); err != nil {
		t.Fatal(err)
	}
	process("42", "vite-child", "101")
	list(Port{Port: 5173, PID: 42, Command: "vite-child", SessionID: "s-42"}, Port{Port: 8080, PID: 41, Command: "node", SessionID: "s-41"})
}

// TestSockDiagAgreesWithTheTables: the kernel's answer through sock_diag
// and /proc/net's tables list the same listening sockets, here among them
// loopback listeners of both families and one on every address.
func TestSockDiagAgreesWithTheTables(t *testing.T) {
	var want []int
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0", "0.0.0.0:0"} {
		network := "tcp4"
		if strings.HasPrefix(addr, "[") {
			network = "tcp6"
		}
		ln, err := net.Listen(network, addr)
		if err != nil {
			t.Logf("%s: %v (no such family here)", addr, err)
			continue
		}
		defer ln.Close()
		want = append(want, ln.Addr().(*net.TCPAddr).Port)
	}
	if len(want) == 0 {
		t.Fatal("could not listen on any address")
	}
	// Listening sockets of the rest of the machine may come and go
	// between the two reads: read until both agree.
	var fromDiag, fromTables map[uint64]int
	testutil.Eventually(t, 10*time.Second, "sock_diag and the tables to agree", func() bool {
		fromDiag, fromTables = make(map[uint64]int), make(map[uint64]int)
		if err := diagListening(fromDiag); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"tcp", "tcp6"} {
			if err := listening(filepath.Join(procfs.Root, "net", name), fromTables); err != nil {
				t.Fatal(err)
			}
		}
		return maps.Equal(fromDiag, fromTables)
	})
	for _, port := range want {
		if !slices.Contains(slices.Collect(maps.Values(fromDiag)), port) {
			t.Errorf("sock_diag left out the listener on port %d: %v", port, fromDiag)
		}
	}
}

// TestListerPicksOneProcessPerPort: a port two processes listen on
// (SO_REUSEPORT) is listed with the lower pid, every time, not with
// whichever a map gives first.
func TestListerPicksOneProcessPerPort(t *testing.T) {
	root := t.TempDir()
	head := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	testutil.WriteFile(t, root, "net/tcp", head+
		"   0: 0100007F:1435 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 101 1 0 100 0 0 10 0\n"+
		"   1: 0100007F:1435 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 102 1 0 100 0 0 10 0\n")
	for pid, inode := range map[string]string{"41": "101", "40": "102"} {
		testutil.WriteFile(t, root, pid+"/stat", pid+" (vite) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 0 0 0\n")
		if err := os.MkdirAll(filepath.Join(root, pid, "fd"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("socket:["+inode+"]", filepath.Join(root, pid, "fd", "3")); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 {
		got, err := NewLister(root, 1).List()
		if err != nil {
			t.Fatal(err)
		}
		if want := []Port{{Port: 5173, PID: 40, Command: "vite"}}; !slices.Equal(got, want) {
			t.Fatalf("listed %+v, want %+v", got, want)
		}
	}
}

// TestListerKeepsSessionIDsSmall: a process may set the session variable
// to anything; what is not a session's id, too long or of other
// characters, is not taken for one.
func TestListerKeepsSessionIDsSmall(t *testing.T) {
	root := t.TempDir()
	head := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	var rows []string
	for i, env := range []string{
		"5b0c7c1e-2f43-4d8e-9a51-0e6f3c2a9b17",
		strings.Repeat("a", maxSessionID+1),
		"id\"with quotes",
		"",
	} {
		pid := 40 + i
		inode := 100 + i
		rows = append(rows, "   0: 0100007F:"+fmt.Sprintf("%04X", 5000+i)+" 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 "+strconv.Itoa(inode)+" 1 0 100 0 0 10 0\n")
		testutil.WriteFile(t, root, strconv.Itoa(pid)+"/stat", strconv.Itoa(pid)+" (node) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 0 0 0\n")
		testutil.WriteFile(t, root, strconv.Itoa(pid)+"/environ", "PATH=/bin\x00"+sessionEnv+env+"\x00")
		if err := os.MkdirAll(filepath.Join(root, strconv.Itoa(pid), "fd"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("socket:["+strconv.Itoa(inode)+"]", filepath.Join(root, strconv.Itoa(pid), "fd", "3")); err != nil {
			t.Fatal(err)
		}
	}
	testutil.WriteFile(t, root, "net/tcp", head+strings.Join(rows, ""))
	got, err := NewLister(root, 1).List()
	if err != nil {
		t.Fatal(err)
	}
	want := []Port{
		{Port: 5000, PID: 40, Command: "node", SessionID: "5b0c7c1e-2f43-4d8e-9a51-0e6f3c2a9b17"},
		{Port: 5001, PID: 41, Command: "node"},
		{Port: 5002, PID: 42, Command: "node"},
		{Port: 5003, PID: 43, Command: "node"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("listed %+v,\nwant %+v", got, want)
	}
}
