package publicip

import (
	"errors"
	"net"
	"net/netip"
	"testing"
)

// TestAbusePublicAddressRule: every spelling of a non-public IPv4 address inside IPv6 is
// refused like the IPv4 address itself (A3, X8): IPv4-mapped, IPv4-compatible,
// NAT64 (well-known and local-use), 6to4 and Teredo.
func TestAbusePublicAddressRule(t *testing.T) {
	for ip, want := range map[string]bool{
		// public
		"8.8.8.8": true, "1.1.1.1": true, "203.0.114.9": true, "2606:4700:4700::1111": true,
		"64:ff9b::808:808": true, "2002:808:808::1": true, "::ffff:8.8.8.8": true,
		"2001:0:4136:e378:8000:63bf:f7f7:f7f7": true, // Teredo: server 65.54.227.120, client 8.8.8.8
		// IPv4 special-purpose blocks
		"127.0.0.1": false, "127.5.5.5": false, "10.1.2.3": false, "172.16.0.1": false, "172.31.255.255": false,
		"192.168.1.1": false, "169.254.169.254": false, "100.64.0.1": false, "0.0.0.0": false, "0.1.2.3": false,
		"192.0.0.8": false, "192.0.2.1": false, "198.18.0.1": false, "198.51.100.7": false, "203.0.113.1": false,
		"224.0.0.1": false, "239.255.255.250": false, "240.0.0.1": false, "255.255.255.255": false, "192.88.99.1": false,
		// IPv6 blocks
		"::": false, "::1": false, "fe80::1": false, "fe80::1%eth0": false, "fd00::1": false, "fc00::1": false,
		"fec0::1": false, "ff02::1": false, "2001:db8::1": false, "100::1": false, "3fff::1": false,
		// IPv4 embedded in IPv6
		"::ffff:10.0.0.1": false, "::ffff:127.0.0.1": false, "::ffff:169.254.169.254": false,
		"::127.0.0.1": false, "::10.0.0.1": false, "::169.254.169.254": false,
		"64:ff9b::a9fe:a9fe": false, "64:ff9b::7f00:1": false, "64:ff9b::a00:1": false,
		"64:ff9b:1::808:808": false, "64:ff9b:1:2::1": false,
		"2002:a9fe:a9fe::1": false, "2002:7f00:1::": false, "2002:c0a8:101::1": false,
		"2001:0:4136:e378:8000:63bf:80ff:fffe": false, // Teredo client 127.0.0.1
		"2001:0:7f00:1::1":                     false, // Teredo server 127.0.0.1
	} {
		a, err := netip.ParseAddr(ip)
		if err != nil {
			t.Fatalf("%s: %v", ip, err)
		}
		if got := Public(a); got != want {
			t.Errorf("Public(%s) = %v, want %v", ip, got, want)
		}
		if got := PublicIP(net.ParseIP(stripZone(ip))); got != want {
			t.Errorf("PublicIP(%s) = %v, want %v", ip, got, want)
		}
	}
	if Public(netip.Addr{}) || PublicIP(nil) {
		t.Error("the zero address is public")
	}
}

func stripZone(s string) string {
	for i := range s {
		if s[i] == '%' {
			return s[:i]
		}
	}
	return s
}

// TestAbuseOutboundNeverReachesTheServer: in development (private addresses
// allowed) the rule still refuses the server's own listening address in
// every spelling that reaches it, and allows other loopback ports; in
// production it refuses every non-public address.
func TestAbuseOutboundNeverReachesTheServer(t *testing.T) {
	ap := netip.MustParseAddrPort
	dev := NewOutbound(true, "127.0.0.1:8080")
	for _, a := range []string{"127.0.0.1:8080", "127.0.0.2:8080", "[::1]:8080", "0.0.0.0:8080", "[::]:8080",
		"[::ffff:127.0.0.1]:8080", "[::127.0.0.1]:8080", "[64:ff9b::7f00:1]:8080", "[2002:7f00:1::]:8080"} {
		if err := dev.Check(ap(a)); !errors.Is(err, ErrSelf) {
			t.Errorf("development, listening on 127.0.0.1:8080: %s → %v, want the server's own address refused", a, err)
		}
	}
	for _, a := range []string{"127.0.0.1:9000", "10.0.0.5:8080", "8.8.8.8:443"} {
		if err := dev.Check(ap(a)); err != nil {
			t.Errorf("development: %s → %v, want allowed", a, err)
		}
	}
	every := NewOutbound(true, ":8080")
	for _, a := range []string{"127.0.0.1:8080", "0.0.0.0:8080", "[::1]:8080"} {
		if err := every.Check(ap(a)); !errors.Is(err, ErrSelf) {
			t.Errorf("development, listening on :8080: %s → %v, want refused", a, err)
		}
	}
	if err := every.Check(ap("8.8.8.8:8080")); err != nil {
		t.Errorf("another host's port 8080 refused: %v", err)
	}
	prod := NewOutbound(false, "0.0.0.0:443")
	for a, want := range map[string]error{"127.0.0.1:9000": ErrNotPublic, "[64:ff9b::a9fe:a9fe]:80": ErrNotPublic,
		"[::127.0.0.1]:80": ErrNotPublic, "8.8.8.8:443": nil, "127.0.0.1:443": ErrSelf} {
		if err := prod.Check(ap(a)); !errors.Is(err, want) {
			t.Errorf("production: %s → %v, want %v", a, err, want)
		}
	}
}
