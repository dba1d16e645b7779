package domain

import (
	"net"
	"strings"

	"github.com/clusterdeck/clusterdeck/models/publicip"
)

// LoopbackHost reports whether host names this machine: "localhost",
// 127.0.0.0/8 or ::1. It takes a Host header or a URL's host, with or
// without a port or IPv6 brackets. The one rule for "this machine": the
// development routes (OP5) and webhook URLs in development (X8) both ask it.
func LoopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// PublicHost reports whether a URL's host may be reached by a tenant's
// outbound request as far as its spelling tells (X8): a name (judged again
// when it is dialled, by publicip.Outbound), or an address publicip.Public
// accepts; never this machine.
func PublicHost(host string) bool {
	if LoopbackHost(host) {
		return false
	}
	ip := net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	return ip == nil || publicip.PublicIP(ip)
}
