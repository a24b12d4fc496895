//go:build !linux

package ws

import "net"

// sendQueueEmpty reports false: where the send queue cannot be read, a
// session's reader never writes to a client itself.
func sendQueueEmpty(net.Conn) bool { return false }
