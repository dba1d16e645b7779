package nodespec

import (
	"slices"
	"strconv"
	"strings"
)

// Names of the variables Clusterdeck sets on every node (N2). A user's env
// may not set any of them.
const (
	EnvMasterAddr   = "MASTER_ADDR"        // rank-0 address on the interconnect
	EnvPrimaryAddr  = "PRIMARY_ADDR"       // same as MASTER_ADDR
	EnvMasterPort   = "MASTER_PORT"        // rendezvous port
	EnvPrimaryPort  = "PRIMARY_PORT"       // same as MASTER_PORT
	EnvNodeRank     = "NODE_RANK"          // this node's rank; 0 is the primary
	EnvNNodes       = "NNODES"             // number of nodes
	EnvWorldSize    = "WORLD_SIZE"         // nodes × GPUs per node
	EnvGPUsPerNode  = "GPUS_PER_NODE"      // GPUs on each node
	EnvNCCLSocketIf = "NCCL_SOCKET_IFNAME" // interface of the interconnect
)

var reservedEnv = []string{
	EnvGPUsPerNode, EnvMasterAddr, EnvMasterPort, EnvNCCLSocketIf, EnvNNodes,
	EnvNodeRank, EnvPrimaryAddr, EnvPrimaryPort, EnvWorldSize,
}

// ReservedEnv returns the names Clusterdeck sets on every node, sorted.
func ReservedEnv() []string { return slices.Clone(reservedEnv) }

// IsReservedEnv reports whether name is set by Clusterdeck on every node.
func IsReservedEnv(name string) bool { return slices.Contains(reservedEnv, name) }

// MallocHint is the one-sentence suggestion shown beside the env editor (N2).
const MallocHint = "For tensor-parallel work, add MALLOC_ARENA_MAX=1 to your env: " +
	"it stops glibc from giving every thread its own memory arena, which keeps host memory " +
	"from ballooning when many threads allocate at once."

// EnvVar is one environment variable.
type EnvVar struct {
	Name  string
	Value string
}

// Env returns the environment of the node of the given rank, sorted by name:
// the reserved variables (N2) and the user's own (N3). Every node gets the
// same list except for NODE_RANK. WORLD_SIZE counts GPUs (nodes × GPUs per
// node), the number of processes a one-process-per-GPU launcher starts.
// A user variable with a reserved name (which Validate rejects) is ignored.
func (c Cluster) Env(rank int) []EnvVar {
	primary := c.Primary().PrivateIP
	port := strconv.Itoa(c.masterPort())
	env := []EnvVar{
		{EnvGPUsPerNode, strconv.Itoa(c.GPUsPerNode)},
		{EnvMasterAddr, primary},
		{EnvMasterPort, port},
		{EnvNCCLSocketIf, c.iface()},
		{EnvNNodes, strconv.Itoa(len(c.Nodes))},
		{EnvNodeRank, strconv.Itoa(rank)},
		{EnvPrimaryAddr, primary},
		{EnvPrimaryPort, port},
		{EnvWorldSize, strconv.Itoa(c.WorldSize())},
	}
	for k, v := range c.UserEnv {
		if !IsReservedEnv(k) {
			env = append(env, EnvVar{k, v})
		}
	}
	slices.SortFunc(env, func(a, b EnvVar) int { return strings.Compare(a.Name, b.Name) })
	return env
}

// EnvBlock returns the node's environment as POSIX shell, one
// `export NAME=value` per variable in Env order, each value quoted so the
// shell reads it back byte for byte: values made only of safe characters
// stay bare, anything else is single-quoted (see ShellQuote), so $, `, ",
// \, ! and newlines are never interpreted. Paste it into a shell or save it
// as /etc/profile.d/clusterdeck.sh.
//
// A variable whose name is not a valid shell name (which Validate rejects) is
// left out, so the block always stays valid shell.
func (c Cluster) EnvBlock(rank int) string {
	var b strings.Builder
	for _, e := range c.Env(rank) {
		if !envNameRE.MatchString(e.Name) {
			continue
		}
		b.WriteString("export ")
		b.WriteString(e.Name)
		b.WriteByte('=')
		b.WriteString(ShellQuote(e.Value))
		b.WriteByte('\n')
	}
	return b.String()
}

// ShellQuote quotes s as one POSIX shell word. Strings of only letters,
// digits and @%+:,./_- come back unchanged; anything else, including the
// empty string, is wrapped in single quotes, and each single quote inside
// is closed, escaped and reopened:
//
//	it's $HOME  →  'it'\''s $HOME'
//
// The result is safe wherever the shell expects a word, including after
// NAME= (no tilde, glob, variable or command expansion can happen).
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool { return !isShellSafe(r) }) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func isShellSafe(r rune) bool {
	switch {
	case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		return true
	}
	return strings.ContainsRune("@%+:,./_-", r)
}
