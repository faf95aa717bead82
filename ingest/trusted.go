package ingest

// The client address behind trusted proxies (X-Forwarded-For).

import (
	"bytes"
	"fmt"
	"net/netip"
	"strings"
)

// client is the address the proxy believes: of the X-Forwarded-For hops
// and then the peer's address, the last one that is not a trusted proxy
// (the first untrusted hop from the right), or the first hop when all
// are trusted. Without trusted proxies it is the peer's address, or the
// last X-Forwarded-For hop when the format has no peer address.
func (t *template) client(ip, xff []byte) []byte {
	if len(t.trusted) == 0 || len(xff) == 0 {
		if len(ip) > 0 || len(xff) == 0 {
			return ip
		}
		return lastHop(xff)
	}
	if len(ip) > 0 && !isTrusted(ip, t.trusted) {
		return ip
	}
	if h := forwardedClient(xff, t.trusted); len(h) > 0 {
		return h
	}
	return ip
}

// forwardedClient is the client an X-Forwarded-For list names for a server
// behind the trusted proxies: the first hop from the right that is not a
// trusted proxy, or the first hop when all are (its port stripped). With no
// trusted proxies it is the last hop, the address the nearest proxy saw:
// the hops to its left are what the client claims.
func forwardedClient(xff []byte, trusted []netip.Prefix) []byte {
	for len(xff) > 0 {
		h := lastHop(xff)
		i := bytes.LastIndexByte(xff, ',')
		if i < 0 || !isTrusted(h, trusted) {
			return h
		}
		xff = xff[:i]
	}
	return nil
}

// lastHop is the last address of an X-Forwarded-For list, its port
// stripped.
func lastHop(xff []byte) []byte {
	if i := bytes.LastIndexByte(xff, ','); i >= 0 {
		xff = xff[i+1:]
	}
	return stripPort(bytes.TrimSpace(xff))
}

// isTrusted reports whether addr is among the trusted proxies.
func isTrusted(addr []byte, trusted []netip.Prefix) bool {
	if len(trusted) == 0 {
		return false
	}
	a, err := netip.ParseAddr(string(addr))
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ParseTrustedProxy parses an address or a CIDR prefix.
func ParseTrustedProxy(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return p, fmt.Errorf("%q is not an address or a CIDR prefix such as 10.0.0.0/8", s)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not an address or a CIDR prefix such as 10.0.0.0/8", s)
	}
	return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
}
