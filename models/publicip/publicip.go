// Package publicip is the one rule for which addresses an outbound request
// of a tenant's (a webhook endpoint) may reach: globally reachable unicast
// only. An IPv4 address embedded in an IPv6 one (IPv4-mapped,
// IPv4-compatible, NAT64, 6to4, Teredo) is judged as the IPv4 address it
// carries, so a private or loopback IPv4 cannot be reached through its IPv6
// spelling. The ranges are IANA's special-purpose address registries
// (RFC 6890 and its updates): any block whose "Globally Reachable" is false.
// It imports only the standard library.
package publicip

import (
	"net"
	"net/netip"
)

// notGlobal4 are the IPv4 special-purpose blocks that are not globally
// reachable, or not unicast.
var notGlobal4 = prefixes(
	"0.0.0.0/8",       // "this network" (RFC 791)
	"10.0.0.0/8",      // private (RFC 1918)
	"100.64.0.0/10",   // shared address space, CGNAT (RFC 6598)
	"127.0.0.0/8",     // loopback
	"169.254.0.0/16",  // link-local (RFC 3927)
	"172.16.0.0/12",   // private
	"192.0.0.0/24",    // IETF protocol assignments (RFC 6890)
	"192.0.2.0/24",    // documentation TEST-NET-1 (RFC 5737)
	"192.88.99.0/24",  // 6to4 relay anycast, deprecated (RFC 7526)
	"192.168.0.0/16",  // private
	"198.18.0.0/15",   // benchmarking (RFC 2544)
	"198.51.100.0/24", // documentation TEST-NET-2
	"203.0.113.0/24",  // documentation TEST-NET-3
	"224.0.0.0/4",     // multicast
	"240.0.0.0/4",     // reserved, and the limited broadcast
)

// notGlobal6 are the IPv6 blocks that are not globally reachable unicast,
// beside the embeddings of IPv4 that Embedded unpacks.
var notGlobal6 = prefixes(
	"::/128",         // unspecified
	"::1/128",        // loopback
	"100::/64",       // discard-only (RFC 6666)
	"64:ff9b:1::/48", // local-use NAT64 (RFC 8215): translates to the operator's own network
	"2001::/23",      // IETF protocol assignments (Teredo's 2001::/32 is unpacked first)
	"2001:db8::/32",  // documentation (RFC 3849)
	"3fff::/20",      // documentation (RFC 9637)
	"5f00::/16",      // segment routing SIDs (RFC 9602)
	"fc00::/7",       // unique local (RFC 4193)
	"fe80::/10",      // link-local
	"fec0::/10",      // site-local, deprecated (RFC 3879)
	"ff00::/8",       // multicast
)

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96") // RFC 6052
	compat    = netip.MustParsePrefix("::/96")        // IPv4-compatible, deprecated (RFC 4291)
	sixToFour = netip.MustParsePrefix("2002::/16")    // RFC 3056
	teredo    = netip.MustParsePrefix("2001::/32")    // RFC 4380
)

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// Embedded returns the IPv4 addresses an IPv6 address carries: the mapped
// or compatible address, NAT64's, 6to4's, or Teredo's server and client
// (the client's obfuscated by inversion). An IPv4 address returns itself.
func Embedded(a netip.Addr) []netip.Addr {
	a = a.WithZone("")
	if a.Is4() || a.Is4In6() {
		return []netip.Addr{a.Unmap()}
	}
	b := a.As16()
	v4 := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{b[i], b[i+1], b[i+2], b[i+3]}) }
	switch {
	case nat64.Contains(a):
		return []netip.Addr{v4(12)}
	case compat.Contains(a) && a != netip.IPv6Unspecified() && a != netip.IPv6Loopback():
		return []netip.Addr{v4(12)}
	case sixToFour.Contains(a):
		return []netip.Addr{v4(2)}
	case teredo.Contains(a):
		client := [4]byte{^b[12], ^b[13], ^b[14], ^b[15]}
		return []netip.Addr{v4(4), netip.AddrFrom4(client)}
	}
	return nil
}

// Public reports whether a may be reached by a tenant's outbound request:
// a globally reachable unicast address, and every IPv4 address it embeds
// one too.
func Public(a netip.Addr) bool {
	if !a.IsValid() {
		return false
	}
	a = a.WithZone("")
	if inner := Embedded(a); inner != nil {
		for _, v4 := range inner {
			if !public4(v4) {
				return false
			}
		}
		return a.Is4() || a.Is4In6() || !inAny(notGlobal6, a) || teredo.Contains(a)
	}
	return a.Is6() && !inAny(notGlobal6, a)
}

// PublicIP is Public for a net.IP (nil is not public).
func PublicIP(ip net.IP) bool {
	a, ok := netip.AddrFromSlice(ip)
	return ok && Public(a)
}

func public4(a netip.Addr) bool { return !inAny(notGlobal4, a) }

func inAny(ps []netip.Prefix, a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Outbound is the address rule of a tenant's outbound requests: public
// addresses only (private ones too when AllowPrivate, in development),
// and never the server's own listening address, in any mode, so a webhook
// cannot call the server's own development or admin routes.
type Outbound struct {
	AllowPrivate bool
	self         []netip.AddrPort // the server's listening addresses
	selfPorts    map[uint16]bool  // ports of listeners on every address (0.0.0.0, ::)
	local        map[netip.Addr]bool
}

// NewOutbound builds the rule for a server listening on listen (e.g.
// "127.0.0.1:8080", ":8080"); the host's own interface addresses are read
// once, so that a listener on every address is recognised by any of them.
func NewOutbound(allowPrivate bool, listen ...string) *Outbound {
	o := &Outbound{AllowPrivate: allowPrivate, selfPorts: map[uint16]bool{}, local: map[netip.Addr]bool{}}
	for _, l := range listen {
		host, port, err := net.SplitHostPort(l)
		if err != nil {
			continue
		}
		p, err := netip.ParseAddrPort(net.JoinHostPort(orAny(host), port))
		if err != nil {
			if ips, err := net.LookupIP(host); err == nil { // "localhost:8080"
				for _, ip := range ips {
					if a, ok := netip.AddrFromSlice(ip); ok {
						o.self = append(o.self, netip.AddrPortFrom(a.Unmap(), p.Port()))
					}
				}
			}
			continue
		}
		if p.Addr().IsUnspecified() {
			o.selfPorts[p.Port()] = true
			continue
		}
		o.self = append(o.self, netip.AddrPortFrom(p.Addr().Unmap(), p.Port()))
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(n.IP); ok {
					o.local[ip.Unmap()] = true
				}
			}
		}
	}
	return o
}

func orAny(host string) string {
	if host == "" {
		return "0.0.0.0"
	}
	return host
}

// ErrSelf and ErrNotPublic are why Check refuses an address.
var (
	ErrSelf      = errorString("the server's own listening address")
	ErrNotPublic = errorString("not a public address (private, loopback, link-local or reserved)")
)

type errorString string

func (e errorString) Error() string { return string(e) }

// Check refuses the server's own listening address and, unless
// AllowPrivate, every address that is not Public.
func (o *Outbound) Check(ap netip.AddrPort) error {
	a := ap.Addr().WithZone("").Unmap()
	for _, inner := range append(Embedded(a), a) {
		if o.isSelf(netip.AddrPortFrom(inner, ap.Port())) {
			return ErrSelf
		}
	}
	if !o.AllowPrivate && !Public(a) {
		return ErrNotPublic
	}
	return nil
}

func (o *Outbound) isSelf(ap netip.AddrPort) bool {
	a := ap.Addr()
	for _, s := range o.self {
		if s.Port() != ap.Port() {
			continue
		}
		// A listener on a loopback address answers on the whole of 127/8
		// only when bound there; the same address, or any loopback or
		// unspecified spelling of a loopback listener, is the server.
		if s.Addr() == a || (s.Addr().IsLoopback() && (a.IsLoopback() || a.IsUnspecified())) {
			return true
		}
	}
	return o.selfPorts[ap.Port()] && (a.IsLoopback() || a.IsUnspecified() || o.local[a])
}
