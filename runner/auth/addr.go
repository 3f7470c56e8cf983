package auth

import (
	"net"
	"net/netip"
	"strings"
)

// IsLoopback reports whether a listen address ("host:port", or a bare host)
// reaches only this machine: 127.0.0.0/8, ::1 or the name localhost. An
// empty host (":7420") means every interface and is not loopback; other
// names are not resolved and count as not loopback.
func IsLoopback(addr string) bool {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "" {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	return ip.Unmap().IsLoopback()
}

// RequireForAddr refuses a listen address beyond loopback when no token is
// configured; loopback addresses may go without one.
func RequireForAddr(addr string, t *Tokens) error {
	if t.Empty() && !IsLoopback(addr) {
		return &InsecureListenError{Addr: addr}
	}
	return nil
}
