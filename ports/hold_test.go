package ports

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
)

// envListeners, set to a count, makes a run of this test binary hold that
// many listeners on 127.0.0.1 for the benchmarks (BenchmarkPoll): it
// says "ready", then for each line it reads closes its oldest listener,
// opens a new one and says its port.
const envListeners = "PORTS_TEST_LISTENERS"

// holdListeners is the test binary run with envListeners set.
func holdListeners(count string) {
	n, err := strconv.Atoi(count)
	if err != nil {
		os.Exit(2)
	}
	lns := make([]net.Listener, 0, n)
	listen := func() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		lns = append(lns, ln)
	}
	for range n {
		listen()
	}
	fmt.Println("ready")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		lns[0].Close()
		lns = lns[1:]
		listen()
		fmt.Println(lns[len(lns)-1].Addr().(*net.TCPAddr).Port)
	}
	os.Exit(0)
}
