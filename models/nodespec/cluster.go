package nodespec

import (
	"fmt"
	"maps"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Software a cluster runs across its nodes (S1).
const (
	SoftwareNone       = "none"
	SoftwareSlurm      = "slurm"
	SoftwareKubernetes = "kubernetes"
	SoftwareRay        = "ray"
)

// Machine kinds (O1). Only vm and bare_metal get the /shared folder (V4).
const (
	KindVM        = "vm"
	KindBareMetal = "bare_metal"
	KindContainer = "container"
)

// Interconnects (O1). They decide how large a message the NCCL test sends.
const (
	InterconnectEthernet   = "ethernet"
	InterconnectInfiniBand = "infiniband"
	InterconnectRoCE       = "roce"
)

// Shape limits and defaults.
const (
	MinNodes = 2  // smallest cluster (O3)
	MaxNodes = 64 // largest self-serve cluster (O2)

	DefaultInterface  = "ens1"   // NCCL_SOCKET_IFNAME when the provider names none (N2)
	DefaultMasterPort = 29500    // PyTorch's customary rendezvous port
	DefaultSSHPort    = 22       // SSH port when a node does not say
	DefaultSSHUser    = "ubuntu" // SSH user when a node does not say

	// PrivateNetwork is the private network nodes sit on unless the provider
	// says otherwise (N1).
	PrivateNetwork = "10.77.0.0/24"

	// MaxEnvValueBytes bounds one user variable's value.
	MaxEnvValueBytes = 32 << 10
)

// Node is one machine of a cluster.
type Node struct {
	// Rank is the node's global rank; 0 is the primary (head) node.
	Rank int
	// Name is the node's host name, "node-<rank>" by default (N1). It must
	// be a lowercase RFC 1123 label: it goes into the hostfile, slurm.conf
	// and shell commands.
	Name string
	// PrivateIP is the node's IPv4 address on the interconnect.
	PrivateIP string
	// PublicHost is the address customers SSH to (an IP or a DNS name), or
	// "" while the node has none yet or when the site has no public
	// addresses (then Cluster.Gateway is set).
	PublicHost string
	// SSHPort is the SSH port on PublicHost, or on PrivateIP behind a
	// gateway; 0 means 22.
	SSHPort int
	// SSHUser is the login user; "" means "ubuntu".
	SSHUser string
}

// Cluster is the shape of a cluster: everything the generators need.
type Cluster struct {
	// Name is the customer's name for the cluster. It is optional; Slurm's
	// ClusterName and SSH host aliases use a sanitised form of it.
	Name string
	// Software is one of SoftwareNone (the default when ""), SoftwareSlurm,
	// SoftwareKubernetes or SoftwareRay.
	Software string
	// MachineKind is one of KindVM, KindBareMetal or KindContainer.
	MachineKind string
	// Interconnect is one of InterconnectEthernet (the default when ""),
	// InterconnectInfiniBand or InterconnectRoCE.
	Interconnect string
	// NICs and NICGbps are one machine's fabric cards and each one's line
	// rate in Gbit/s (8 and 400 for eight NDR ports); none (or Ethernet)
	// means the machines meet on the encrypted overlay (O1). They decide
	// what the fabric checks expect (fabric.go).
	NICs    int
	NICGbps int
	// GPUsPerNode is 1, 2, 4 or 8.
	GPUsPerNode int
	// CPUsPerNode and MemoryGBPerNode describe one machine for slurm.conf;
	// 0 means unknown (the line is then left out).
	CPUsPerNode     int
	MemoryGBPerNode int
	// Interface is the network interface of the interconnect, exported as
	// NCCL_SOCKET_IFNAME; "" means DefaultInterface.
	Interface string
	// MasterPort is the rendezvous port; 0 means DefaultMasterPort.
	MasterPort int
	// Gateway is "[user@]host[:port]" of the SSH jump host for sites whose
	// nodes have no public address (N5), else "".
	Gateway string
	// UserEnv is the customer's own environment, identical on every node
	// (N3). It may not set a reserved name (see ReservedEnv).
	UserEnv map[string]string
	// Nodes are the machines, any order; ranks must be 0..len(Nodes)-1.
	Nodes []Node
}

// DefaultNodes returns n nodes named node-0 … node-(n-1) at 10.77.0.1 …
// 10.77.0.n on the private network (N1), with the default SSH port and user
// and no public address. n is at most MaxNodes in practice; n ≤ 0 gives nil.
func DefaultNodes(n int) []Node {
	if n <= 0 {
		return nil
	}
	nodes := make([]Node, n)
	for i := range nodes {
		nodes[i] = Node{
			Rank:      i,
			Name:      NodeName(i),
			PrivateIP: fmt.Sprintf("10.77.0.%d", i+1),
			SSHPort:   DefaultSSHPort,
			SSHUser:   DefaultSSHUser,
		}
	}
	return nodes
}

// NodeName is the default name of the node of the given rank: "node-<rank>".
func NodeName(rank int) string { return "node-" + strconv.Itoa(rank) }

// FieldError is one problem with one field of a Cluster. Field uses the
// API's JSON names: "nodes", "gpusPerNode", "env.HF_TOKEN",
// "nodes[1].privateIp", …
type FieldError struct {
	Field   string
	Message string
}

func (e FieldError) Error() string { return e.Field + ": " + e.Message }

// ValidationError lists every problem Validate found, in field order.
type ValidationError []FieldError

func (v ValidationError) Error() string {
	msgs := make([]string, len(v))
	for i, e := range v {
		msgs[i] = e.Error()
	}
	return "invalid cluster: " + strings.Join(msgs, "; ")
}

// Fields returns the problems as a field → message map for forms (A4). When
// one field has several problems, the first wins.
func (v ValidationError) Fields() map[string]string {
	m := make(map[string]string, len(v))
	for _, e := range v {
		if _, ok := m[e.Field]; !ok {
			m[e.Field] = e.Message
		}
	}
	return m
}

var (
	envNameRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	labelRE    = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	dnsNameRE  = regexp.MustCompile(`^(?i)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*\.?$`)
	softwareRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,15}$`)
	userRE     = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)
	ifaceRE    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,14}$`)
	maxNameLen = 100
)

// portsUsedBy lists ports the software itself listens on between nodes, so
// MasterPort cannot collide with them.
var portsUsedBy = map[string]map[int]string{
	SoftwareSlurm:      {6817: "slurmctld", 6818: "slurmd", 6819: "slurmdbd"},
	SoftwareKubernetes: {6443: "the Kubernetes API server", 2379: "etcd", 2380: "etcd", 10250: "the kubelet", 10257: "kube-controller-manager", 10259: "kube-scheduler"},
	SoftwareRay:        {RayPort: "the Ray head (GCS)", 8265: "the Ray dashboard", 10001: "the Ray client server"},
}

// Validate checks the cluster and returns nil or a ValidationError listing
// every problem: node count outside 2–64, GPUs per node not 1, 2, 4 or 8,
// a malformed software name, unknown machine kind or interconnect, Kubernetes on containers
// (S1), duplicate or malformed node names, addresses and ranks, bad ports,
// users, interface or gateway, and user variables that are malformed or try
// to set a reserved name.
func (c Cluster) Validate() error {
	var errs ValidationError
	add := func(field, format string, args ...any) {
		errs = append(errs, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}

	if len(c.Name) > maxNameLen {
		add("name", "must be at most %d characters", maxNameLen)
	} else if !utf8.ValidString(c.Name) || strings.IndexFunc(c.Name, unicode.IsControl) >= 0 {
		add("name", "must be printable text on one line")
	}

	// Which software exists is models/software's registry; here only the
	// name's shape matters (it becomes roles, steps and file names).
	if !softwareRE.MatchString(c.software()) {
		add("software", "must be a lowercase name such as none, slurm, kubernetes or ray, not %q", c.Software)
	}
	switch c.MachineKind {
	case KindVM, KindBareMetal:
	case KindContainer:
		if c.software() == SoftwareKubernetes {
			add("software", "kubernetes is offered on vm and bare_metal machines only, not on containers")
		}
	case "":
		add("machineKind", "is required: vm, bare_metal or container")
	default:
		add("machineKind", "must be vm, bare_metal or container, not %q", c.MachineKind)
	}
	switch c.interconnect() {
	case InterconnectEthernet, InterconnectInfiniBand, InterconnectRoCE:
	default:
		add("interconnect", "must be ethernet, infiniband or roce, not %q", c.Interconnect)
	}

	switch c.GPUsPerNode {
	case 1, 2, 4, 8:
	default:
		add("gpusPerNode", "must be 1, 2, 4 or 8, not %d", c.GPUsPerNode)
	}
	if c.CPUsPerNode < 0 {
		add("cpusPerNode", "cannot be negative")
	}
	if c.MemoryGBPerNode < 0 {
		add("memoryGbPerNode", "cannot be negative")
	}
	if c.Interface != "" && !ifaceRE.MatchString(c.Interface) {
		add("interface", "%q is not a network interface name (letters, digits, '_', '.', ':', '-'; at most 15)", c.Interface)
	}
	if c.MasterPort != 0 {
		if c.MasterPort < 1024 || c.MasterPort > 65535 {
			add("masterPort", "must be between 1024 and 65535, not %d", c.MasterPort)
		} else if c.MasterPort == DefaultSSHPort {
			add("masterPort", "%d is the SSH port", c.MasterPort)
		} else if who, ok := portsUsedBy[c.software()][c.MasterPort]; ok {
			add("masterPort", "%d is used by %s; pick another port", c.MasterPort, who)
		}
	}
	if c.Gateway != "" {
		if _, err := parseGateway(c.Gateway); err != nil {
			add("gateway", "%v", err)
		}
	}

	c.validateNodes(add)
	c.validateEnv(add)

	if len(errs) == 0 {
		return nil
	}
	return errs
}

func (c Cluster) validateNodes(add func(field, format string, args ...any)) {
	n := len(c.Nodes)
	if n < MinNodes || n > MaxNodes {
		add("nodes", "a cluster has %d to %d nodes, not %d", MinNodes, MaxNodes, n)
	}
	names := map[string]int{}
	ips := map[netip.Addr]int{}
	ranks := map[int]int{}
	for i, nd := range c.Nodes {
		f := func(name string) string { return fmt.Sprintf("nodes[%d].%s", i, name) }
		if nd.Rank < 0 || nd.Rank >= n {
			add(f("rank"), "must be between 0 and %d, not %d", n-1, nd.Rank)
		} else if j, dup := ranks[nd.Rank]; dup {
			add(f("rank"), "rank %d is also nodes[%d]", nd.Rank, j)
		} else {
			ranks[nd.Rank] = i
		}
		switch {
		case nd.Name == "":
			add(f("name"), "is required")
		case !labelRE.MatchString(nd.Name):
			add(f("name"), "%q is not a host name (lowercase letters, digits and '-', at most 63)", nd.Name)
		default:
			if j, dup := names[nd.Name]; dup {
				add(f("name"), "duplicate node name %q (also nodes[%d])", nd.Name, j)
			} else {
				names[nd.Name] = i
			}
		}
		ip, err := netip.ParseAddr(nd.PrivateIP)
		switch {
		case nd.PrivateIP == "":
			add(f("privateIp"), "is required")
		case err != nil || !ip.Is4():
			add(f("privateIp"), "%q is not an IPv4 address", nd.PrivateIP)
		default:
			if j, dup := ips[ip]; dup {
				add(f("privateIp"), "duplicate private address %s (also nodes[%d])", nd.PrivateIP, j)
			} else {
				ips[ip] = i
			}
		}
		if nd.PublicHost != "" && !validHost(nd.PublicHost) {
			add(f("publicHost"), "%q is not an IP address or DNS name", nd.PublicHost)
		}
		if nd.SSHPort < 0 || nd.SSHPort > 65535 {
			add(f("sshPort"), "must be between 1 and 65535, not %d", nd.SSHPort)
		}
		if nd.SSHUser != "" && !userRE.MatchString(nd.SSHUser) {
			add(f("sshUser"), "%q is not a user name", nd.SSHUser)
		}
	}
}

func (c Cluster) validateEnv(add func(field, format string, args ...any)) {
	for _, k := range slices.Sorted(maps.Keys(c.UserEnv)) {
		v := c.UserEnv[k]
		f := "env." + k
		switch {
		case !envNameRE.MatchString(k):
			add(f, "%q is not a variable name (letters, digits and '_', not starting with a digit)", k)
			continue
		case IsReservedEnv(k):
			add(f, "%s is set by Clusterdeck on every node and cannot be overridden", k)
			continue
		}
		switch {
		case strings.IndexByte(v, 0) >= 0:
			add(f, "value cannot contain a NUL byte")
		case !utf8.ValidString(v):
			add(f, "value must be valid UTF-8 text")
		case len(v) > MaxEnvValueBytes:
			add(f, "value is %d bytes; at most %d", len(v), MaxEnvValueBytes)
		}
	}
}

// validHost reports whether h is an IP address (without zone) or a DNS name.
func validHost(h string) bool {
	if ip, err := netip.ParseAddr(h); err == nil {
		return ip.Zone() == ""
	}
	return len(h) <= 253 && dnsNameRE.MatchString(h)
}

// gateway is a parsed Cluster.Gateway.
type gateway struct {
	User string
	Host string
	Port int
}

// String renders the gateway as ssh -J wants it: "[user@]host:port", with
// an IPv6 host in brackets.
func (g gateway) String() string {
	hp := net.JoinHostPort(g.Host, strconv.Itoa(g.Port))
	if g.User == "" {
		return hp
	}
	return g.User + "@" + hp
}

// parseGateway parses "[user@]host[:port]"; an IPv6 host with a port goes in
// brackets ("user@[2001:db8::1]:2222").
func parseGateway(s string) (gateway, error) {
	var g gateway
	rest := s
	if at := strings.LastIndexByte(s, '@'); at >= 0 {
		g.User, rest = s[:at], s[at+1:]
		if !userRE.MatchString(g.User) {
			return g, fmt.Errorf("%q: %q is not a user name", s, g.User)
		}
	}
	g.Host, g.Port = rest, DefaultSSHPort
	if h, p, err := net.SplitHostPort(rest); err == nil {
		port, perr := strconv.Atoi(p)
		if perr != nil || port < 1 || port > 65535 {
			return g, fmt.Errorf("%q: port %q is not between 1 and 65535", s, p)
		}
		g.Host, g.Port = h, port
	}
	if g.Host == "" || !validHost(g.Host) {
		return g, fmt.Errorf("%q is not [user@]host[:port]", s)
	}
	return g, nil
}

// Defaults, applied by every generator.

func (c Cluster) software() string {
	if c.Software == "" {
		return SoftwareNone
	}
	return c.Software
}

func (c Cluster) interconnect() string {
	if c.Interconnect == "" {
		return InterconnectEthernet
	}
	return c.Interconnect
}

func (c Cluster) iface() string {
	if c.Interface == "" {
		return DefaultInterface
	}
	return c.Interface
}

func (c Cluster) masterPort() int {
	if c.MasterPort == 0 {
		return DefaultMasterPort
	}
	return c.MasterPort
}

func (n Node) sshPort() int {
	if n.SSHPort == 0 {
		return DefaultSSHPort
	}
	return n.SSHPort
}

func (n Node) sshUser() string {
	if n.SSHUser == "" {
		return DefaultSSHUser
	}
	return n.SSHUser
}

// byRank returns the nodes sorted by rank (a copy; the cluster is untouched).
func (c Cluster) byRank() []Node {
	nodes := slices.Clone(c.Nodes)
	slices.SortStableFunc(nodes, func(a, b Node) int { return a.Rank - b.Rank })
	return nodes
}

// Primary returns the rank-0 node, or the lowest-ranked node, or the zero
// Node for a cluster without nodes.
func (c Cluster) Primary() Node {
	var p Node
	found := false
	for _, n := range c.Nodes {
		if !found || n.Rank < p.Rank {
			p, found = n, true
		}
	}
	return p
}

// NodeCount is the number of nodes.
func (c Cluster) NodeCount() int { return len(c.Nodes) }

// WorldSize is the number of GPUs in the cluster: nodes × GPUs per node.
func (c Cluster) WorldSize() int { return len(c.Nodes) * c.GPUsPerNode }

// HasSharedFolder reports whether every node mounts /shared from the head:
// true on vm and bare_metal machines, false on containers (V4).
func (c Cluster) HasSharedFolder() bool {
	return c.MachineKind == KindVM || c.MachineKind == KindBareMetal
}
