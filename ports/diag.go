package ports

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// The sock_diag netlink interface's request and reply for TCP sockets
// (linux/inet_diag.h): inet_diag_req_v2 and inet_diag_msg, each around an
// inet_diag_sockid of 48 bytes.
const (
	diagSockIDBytes = 2 + 2 + 16 + 16 + 4 + 8
	diagReqBytes    = 4 + 4 + diagSockIDBytes
	diagMsgBytes    = 4 + diagSockIDBytes + 5*4
	tcpListen       = 10 // TCP_LISTEN in the kernel's states
)

// diagListening adds to inodes the listening TCP sockets whose address a
// browser on this machine could reach, asking the kernel through
// sock_diag. Reading /proc/net/tcp makes the kernel walk its whole table
// of established connections, empty buckets and all: about 10 ms of
// kernel time a read on a machine with a lot of memory, 1 % of a core at
// one listing a second. Asked for listening sockets only, the kernel
// walks only those.
func diagListening(inodes map[uint64]int) error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_INET_DIAG)
	if err != nil {
		return fmt.Errorf("open sock_diag: %w", err)
	}
	defer unix.Close(fd)
	for _, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
		if err := diagDump(fd, family, inodes); err != nil {
			return err
		}
	}
	return nil
}

// diagDump asks for family's listening TCP sockets and reads the replies.
func diagDump(fd int, family uint8, inodes map[uint64]int) error {
	req := make([]byte, unix.SizeofNlMsghdr+diagReqBytes)
	binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	body := req[unix.SizeofNlMsghdr:]
	body[0], body[1] = family, unix.IPPROTO_TCP
	binary.NativeEndian.PutUint32(body[4:], 1<<tcpListen)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("ask sock_diag: %w", err)
	}
	buf := make([]byte, 32<<10)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return fmt.Errorf("read sock_diag: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return fmt.Errorf("read sock_diag: %w", err)
		}
		for _, m := range msgs {
			switch m.Header.Type {
			case unix.NLMSG_DONE:
				return nil
			case unix.NLMSG_ERROR:
				if len(m.Data) >= 4 {
					if errno := -int32(binary.NativeEndian.Uint32(m.Data)); errno != 0 {
						return fmt.Errorf("sock_diag: %w", unix.Errno(errno))
					}
				}
				return errors.New("sock_diag: an error without its number")
			case unix.SOCK_DIAG_BY_FAMILY:
				addDiagSocket(m.Data, inodes)
			}
		}
	}
}

// addDiagSocket adds one inet_diag_msg's socket to inodes when it listens
// on a reachable address.
func addDiagSocket(b []byte, inodes map[uint64]int) {
	if len(b) < diagMsgBytes || b[1] != tcpListen {
		return
	}
	id := b[4 : 4+diagSockIDBytes]
	port := int(binary.BigEndian.Uint16(id[0:]))
	addr := net.IP(id[4:20])
	if b[0] == unix.AF_INET {
		addr = net.IP(id[4:8])
	}
	inode := binary.NativeEndian.Uint32(b[4+diagSockIDBytes+16:])
	if port != 0 && reachable(addr) {
		inodes[uint64(inode)] = port
	}
}
