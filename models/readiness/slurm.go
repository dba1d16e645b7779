package readiness

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// SlurmNode is one node in one partition as the output lists it. A node in
// several partitions appears once per partition.
type SlurmNode struct {
	Name string
	// Partition is the partition name without the default-partition "*";
	// empty when the format has no partition column.
	Partition string
	// State is the state as printed: "idle", "drng@", "drained*", "IDLE+DRAIN".
	State string
	// Reason is Slurm's reason (the REASON column of `sinfo -N -l`, or
	// scontrol's Reason=), when the output has one.
	Reason string
	// GPUs is the gpu count of scontrol's Gres= or of sinfo's GRES column
	// (`%G`); 0 when the output has neither.
	GPUs int
}

// ParseSlurm parses Slurm output into one entry per node and partition. It
// accepts:
//
//   - the default `sinfo` table (PARTITION AVAIL TIMELIMIT NODES STATE
//     NODELIST, columns in any order), with hostlist expressions in NODELIST
//     that are expanded and checked against the NODES column;
//   - the long node formats `sinfo -N -l` / `sinfo -Nel` (a timestamp line
//     above the header is skipped; REASON may contain spaces);
//   - any other `sinfo -o` format whose header has a STATE column and a
//     NODELIST or HOSTNAMES column;
//   - headerless (`-h`) lines of `%n,%T` ("name,state"), `%N %T`
//     ("hostlist state"), `%N %T %G` ("hostlist state gres") or the six
//     default columns;
//   - `scontrol show node[s]` records (NodeName=… State=…).
//
// `sinfo -R` (reasons without states), truncated records, malformed rows
// and any other text are errors.
func ParseSlurm(output string) ([]SlurmNode, error) {
	output, err := normalize(output)
	if err != nil {
		return nil, fmt.Errorf("slurm: %w", err)
	}
	lines := strings.Split(output, "\n")
	first := firstNonBlank(lines)
	if strings.HasPrefix(strings.TrimSpace(lines[first]), "NodeName=") {
		return parseScontrol(output)
	}
	// A header is in the first lines (after `sinfo -l`'s timestamp line).
	for i, seen := first, 0; i < len(lines) && seen < 2; i++ {
		if strings.TrimSpace(lines[i]) == "" {
			continue
		}
		seen++
		cols := strings.Fields(strings.ToUpper(lines[i]))
		if slices.Contains(cols, "STATE") && (slices.Contains(cols, "NODELIST") || slices.Contains(cols, "HOSTNAMES")) {
			return parseSinfoTable(cols, lines[i+1:], i+2)
		}
		if slices.Contains(cols, "REASON") && slices.Contains(cols, "NODELIST") {
			return nil, fmt.Errorf("slurm: %w: `sinfo -R` lists reasons, not node states", ErrFormat)
		}
	}
	return parseSinfoHeaderless(lines)
}

// Slurm judges sinfo (or scontrol show node) output (S2): a node passes
// only when its state is plain "idle" in every partition that lists it.
// "mix"/"alloc" nodes run jobs and are not idle; drain, down, fail, maint and
// the rest fail with a reason; state suffixes fail too: "*" not responding,
// "~" powered down, "#" powering up, "%"/"!" powering down, "@" reboot
// pending, "^" reboot issued, "$" maintenance reservation, "-" planned for a
// job, "+" jobs completing. scontrol's "IDLE+DRAIN" style flags fail except
// the harmless CLOUD and DYNAMIC_NORM.
//
// Expected nodes are matched by exact name; those not listed are Missing.
// With no expected nodes, every listed node is judged. See [ParseSlurm] for
// the accepted formats.
func Slurm(output string, expected []string) (Report, error) {
	expected, err := cleanExpected(expected)
	if err != nil {
		return Report{}, err
	}
	rows, err := ParseSlurm(output)
	if err != nil {
		return Report{}, err
	}
	return judgeNamed("slurm", aggregateSlurm(rows), expected), nil
}

// aggregateSlurm merges a node's rows across partitions: it passes only if
// every row passes.
func aggregateSlurm(rows []SlurmNode) []listed {
	type agg struct {
		res        NodeResult
		states     []string
		reasons    []string
		partitions []string
	}
	var order []string
	byName := map[string]*agg{}
	for _, row := range rows {
		a := byName[row.Name]
		if a == nil {
			a = &agg{res: NodeResult{Node: row.Name, OK: true}}
			byName[row.Name] = a
			order = append(order, row.Name)
		}
		if !slices.Contains(a.states, row.State) {
			a.states = append(a.states, row.State)
		}
		a.partitions = append(a.partitions, row.Partition)
		if row.GPUs > a.res.GPUs {
			a.res.GPUs = row.GPUs
		}
		ok, why := SlurmStateOK(row.State)
		if ok {
			continue
		}
		a.res.OK = false
		var details []string
		if row.Partition != "" {
			details = append(details, "partition "+row.Partition)
		}
		if r := strings.TrimSpace(row.Reason); r != "" && r != "none" && r != "(null)" {
			details = append(details, "slurm reason: "+r)
		}
		if len(details) > 0 {
			why += " (" + strings.Join(details, "; ") + ")"
		}
		if !slices.Contains(a.reasons, why) {
			a.reasons = append(a.reasons, why)
		}
	}
	out := make([]listed, 0, len(order))
	for _, name := range order {
		a := byName[name]
		a.res.State = strings.Join(a.states, ",")
		a.res.Reason = strings.Join(a.reasons, "; ")
		out = append(out, listed{name: name, res: a.res})
	}
	return out
}

// slurmBase maps Slurm's base state names, short and long, to the long one.
var slurmBase = map[string]string{
	"alloc": "allocated", "allocated": "allocated",
	"block": "blocked", "blocked": "blocked",
	"boot": "reboot_issued", "reboot_issued": "reboot_issued",
	"reboot_requested": "reboot_requested",
	"comp":             "completing", "completing": "completing",
	"down":  "down",
	"drain": "drained", "drained": "drained",
	"drng": "draining", "draining": "draining",
	"fail":  "fail",
	"failg": "failing", "failing": "failing",
	"futr": "future", "future": "future",
	"idle":  "idle",
	"inval": "inval", "invalid": "inval",
	"maint": "maint",
	"mix":   "mixed", "mixed": "mixed",
	"npc": "perfctrs", "perfctrs": "perfctrs",
	"plnd": "planned", "planned": "planned",
	"pow_dn": "power_down", "power_down": "power_down",
	"powered_down":  "powered_down",
	"powering_down": "powering_down",
	"pow_up":        "powering_up", "powering_up": "powering_up",
	"resv": "reserved", "reserved": "reserved",
	"unk": "unknown", "unknown": "unknown",
	"cloud": "cloud",
}

// slurmWhy explains each non-idle base state.
var slurmWhy = map[string]string{
	"allocated":        "allocated to jobs, not idle",
	"mixed":            "partly allocated to jobs (mixed), not idle",
	"blocked":          "blocked",
	"reboot_issued":    "reboot issued",
	"reboot_requested": "reboot requested",
	"completing":       "jobs completing",
	"down":             "down",
	"drained":          "drained",
	"draining":         "draining",
	"fail":             "failed",
	"failing":          "failing",
	"future":           "not yet in service (future)",
	"inval":            "invalid registration",
	"maint":            "in a maintenance reservation",
	"perfctrs":         "performance counters in use",
	"planned":          "planned for a pending job",
	"power_down":       "powering down",
	"powered_down":     "powered down",
	"powering_down":    "powering down",
	"powering_up":      "powering up",
	"reserved":         "in an advance reservation",
	"unknown":          "state unknown to Slurm",
	"cloud":            "cloud node not started",
}

// slurmSuffix explains the one-character state suffixes of sinfo.
var slurmSuffix = map[byte]string{
	'*': "not responding",
	'~': "powered down",
	'#': "powering up or being configured",
	'!': "pending power down",
	'%': "powering down",
	'$': "in a maintenance reservation",
	'@': "pending reboot",
	'^': "reboot issued",
	'-': "planned for a pending job",
	'+': "jobs completing",
}

// slurmFlag explains scontrol's "+FLAG" state flags; "" marks harmless ones.
var slurmFlag = map[string]string{
	"cloud":            "",
	"dynamic_norm":     "",
	"drain":            "drain flag set",
	"not_responding":   "not responding",
	"completing":       "jobs completing",
	"powered_down":     "powered down",
	"power_down":       "power down requested",
	"powering_down":    "powering down",
	"powering_up":      "powering up",
	"power_up":         "power up requested",
	"fail":             "fail flag set",
	"maint":            "in a maintenance reservation",
	"maintenance":      "in a maintenance reservation",
	"reserved":         "in an advance reservation",
	"reboot_requested": "reboot requested",
	"reboot_issued":    "reboot issued",
	"planned":          "planned for a pending job",
	"invalid_reg":      "invalid registration",
	"dynamic_future":   "dynamic node not registered",
	"blocked":          "blocked",
	"resume":           "resume requested",
	"undrain":          "undrain requested",
}

// SlurmStateOK reports whether one printed Slurm state passes S2 (plain
// idle) and, if not, why. Case does not matter.
func SlurmStateOK(state string) (bool, string) {
	s := strings.ToLower(strings.TrimSpace(state))
	if s == "" {
		return false, "no state"
	}
	var whys []string
	// A trailing "+" (e.g. "alloc+") is the completing suffix, not a joiner.
	trailingPlus := strings.HasSuffix(s, "+")
	s = strings.TrimRight(s, "+")
	parts := strings.Split(s, "+")
	var suffixes []byte
	for i, p := range parts {
		for p != "" && slurmSuffix[p[len(p)-1]] != "" {
			suffixes = append(suffixes, p[len(p)-1])
			p = p[:len(p)-1]
		}
		parts[i] = p
	}
	if trailingPlus {
		suffixes = append(suffixes, '+')
	}
	base, known := slurmBase[parts[0]]
	switch {
	case !known:
		whys = append(whys, fmt.Sprintf("unknown Slurm state %q", state))
	case base != "idle":
		whys = append(whys, slurmWhy[base])
	}
	for _, f := range parts[1:] {
		why, known := slurmFlag[f]
		switch {
		case !known:
			whys = append(whys, fmt.Sprintf("unknown state flag %q", strings.ToUpper(f)))
		case f == "drain" && base == "idle":
			whys = append(whys, "drained")
		case why != "":
			whys = append(whys, why)
		}
	}
	for _, c := range suffixes {
		whys = append(whys, slurmSuffix[c])
	}
	if len(whys) == 0 {
		return true, ""
	}
	return false, strings.Join(dedupe(whys), "; ")
}

// parseSinfoTable parses rows under a header whose upper-cased columns are
// cols; lineNo is the 1-based number of rows[0].
func parseSinfoTable(cols []string, rows []string, lineNo int) ([]SlurmNode, error) {
	stateCol := slices.Index(cols, "STATE")
	listCol := slices.Index(cols, "NODELIST")
	if listCol < 0 {
		listCol = slices.Index(cols, "HOSTNAMES")
	}
	partCol := slices.Index(cols, "PARTITION")
	countCol := slices.Index(cols, "NODES")
	reasonCol := slices.Index(cols, "REASON")
	gresCol := slices.Index(cols, "GRES")
	var out []SlurmNode
	for i, line := range rows {
		n := lineNo + i
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Fields(line)
		switch {
		case len(f) == len(cols):
		case len(f) > len(cols) && reasonCol == len(cols)-1:
			// The REASON column is last and may contain spaces.
			f = append(f[:reasonCol], strings.Join(f[reasonCol:], " "))
		case len(f) == len(cols)-1 && countCol >= 0 && f[countCol] == "0":
			continue // an empty partition: "debug up infinite 0 n/a"
		default:
			return nil, fmt.Errorf("slurm: %w: line %d has %d columns, the header %d", ErrFormat, n, len(f), len(cols))
		}
		row := SlurmNode{State: f[stateCol]}
		if partCol >= 0 {
			row.Partition = strings.TrimSuffix(f[partCol], "*")
		}
		if reasonCol >= 0 {
			row.Reason = f[reasonCol]
		}
		if gresCol >= 0 {
			row.GPUs = gresGPUs(f[gresCol])
		}
		names, err := slurmNames(f[listCol], row.State, n)
		if err != nil {
			return nil, err
		}
		if countCol >= 0 {
			c, err := strconv.Atoi(f[countCol])
			if err != nil {
				return nil, fmt.Errorf("slurm: %w: line %d: NODES %q is not a number", ErrFormat, n, f[countCol])
			}
			if c != len(names) {
				return nil, fmt.Errorf("slurm: %w: line %d: NODES says %d but %s names %d nodes", ErrTruncated, n, c, f[listCol], len(names))
			}
		}
		if len(out)+len(names) > MaxHostlist {
			return nil, fmt.Errorf("slurm: %w: line %d: more than %d node rows", ErrFormat, n, MaxHostlist)
		}
		for _, name := range names {
			row.Name = name
			out = append(out, row)
		}
	}
	return out, nil
}

// parseSinfoHeaderless parses `sinfo -h` lines: "name,state" (%n,%T),
// "hostlist state" (%N %T), or the six default columns.
func parseSinfoHeaderless(lines []string) ([]SlurmNode, error) {
	var out []SlurmNode
	for i, line := range lines {
		n := i + 1
		f := strings.Fields(line)
		var list, state, partition, gres string
		switch len(f) {
		case 0:
			continue
		case 1: // %n,%T — split at the last comma outside brackets
			cut := lastTopLevelComma(f[0])
			if cut < 0 {
				return nil, fmt.Errorf("slurm: %w: line %d %q is neither a sinfo table nor \"name,state\" lines", ErrFormat, n, clip(line))
			}
			list, state = f[0][:cut], f[0][cut+1:]
		case 2: // %N %T
			list, state = f[0], f[1]
		case 3: // %N %T %G
			list, state, gres = f[0], f[1], f[2]
		case 6: // -h with the default columns
			partition, state, list = strings.TrimSuffix(f[0], "*"), f[4], f[5]
		case 5:
			if f[3] == "0" {
				continue // empty partition
			}
			fallthrough
		default:
			return nil, fmt.Errorf("slurm: %w: line %d %q is not sinfo output", ErrFormat, n, clip(line))
		}
		names, err := slurmNames(list, state, n)
		if err != nil {
			return nil, err
		}
		if len(out)+len(names) > MaxHostlist {
			return nil, fmt.Errorf("slurm: %w: line %d: more than %d node rows", ErrFormat, n, MaxHostlist)
		}
		for _, name := range names {
			out = append(out, SlurmNode{Name: name, Partition: partition, State: state, GPUs: gresGPUs(gres)})
		}
	}
	return out, nil
}

// slurmNames validates a state's characters and expands a NODELIST.
func slurmNames(list, state string, lineNo int) ([]string, error) {
	for i := 0; i < len(state); i++ {
		c := state[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '+' || slurmSuffix[c] != "") {
			return nil, fmt.Errorf("slurm: %w: line %d: %q is not a node state", ErrFormat, lineNo, clip(state))
		}
	}
	if state == "" {
		return nil, fmt.Errorf("slurm: %w: line %d: no state", ErrTruncated, lineNo)
	}
	names, err := ExpandHostlist(list)
	if err != nil {
		return nil, fmt.Errorf("slurm: %w: line %d: %v", ErrFormat, lineNo, err)
	}
	return names, nil
}

var (
	scontrolState     = regexp.MustCompile(`(?:^|\s)State=(\S+)`)
	scontrolPartition = regexp.MustCompile(`(?:^|\s)Partitions=(\S*)`)
	scontrolGres      = regexp.MustCompile(`(?:^|\s)Gres=(\S*)`)
	scontrolReason    = regexp.MustCompile(`(?m)^\s*Reason=(.*)$`)
)

// parseScontrol parses `scontrol show node[s]` records.
func parseScontrol(output string) ([]SlurmNode, error) {
	var records []string
	for _, line := range strings.Split(output, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "NodeName=") {
			records = append(records, "")
		}
		if len(records) > 0 {
			records[len(records)-1] += line + "\n"
		}
	}
	var out []SlurmNode
	for _, rec := range records {
		name, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(rec), "NodeName="), " ")
		name = strings.TrimSpace(name)
		if err := checkNameChars(name); err != nil || name == "" {
			return nil, fmt.Errorf("slurm: %w: scontrol record with bad NodeName %q", ErrFormat, clip(name))
		}
		m := scontrolState.FindStringSubmatch(rec)
		if m == nil {
			return nil, fmt.Errorf("slurm: %w: scontrol record for %s has no State=", ErrTruncated, name)
		}
		node := SlurmNode{Name: name, State: m[1]}
		if p := scontrolPartition.FindStringSubmatch(rec); p != nil {
			node.Partition = p[1]
		}
		if r := scontrolReason.FindStringSubmatch(rec); r != nil {
			node.Reason = strings.TrimSpace(r[1])
		}
		if g := scontrolGres.FindStringSubmatch(rec); g != nil {
			node.GPUs = gresGPUs(g[1])
		}
		out = append(out, node)
	}
	return out, nil
}

// gresGPUs counts GPUs in a Gres value such as "gpu:a100:8",
// "gpu:nvidia-rtx-3090:1", "gpu:4(S:0-1)" or "gpu:a100:4,gpu:v100:2".
func gresGPUs(gres string) int {
	total := 0
	depth, start := 0, 0
	var items []string
	for i := 0; i <= len(gres); i++ {
		if i == len(gres) || gres[i] == ',' && depth == 0 {
			items = append(items, gres[start:i])
			start = i + 1
			continue
		}
		switch gres[i] {
		case '(':
			depth++
		case ')':
			depth--
		}
	}
	for _, item := range items {
		item, _, _ = strings.Cut(item, "(")
		f := strings.Split(item, ":")
		if len(f) < 2 || f[0] != "gpu" {
			continue
		}
		if n, err := strconv.Atoi(f[len(f)-1]); err == nil && n > 0 && n < 1<<16 {
			total += n
		}
	}
	return total
}

// lastTopLevelComma finds the last comma outside brackets, or -1.
func lastTopLevelComma(s string) int {
	depth := 0
	last := -1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				last = i
			}
		}
	}
	return last
}

func firstNonBlank(lines []string) int {
	for i, l := range lines {
		if strings.TrimSpace(l) != "" {
			return i
		}
	}
	return 0
}

func dedupe(list []string) []string {
	var out []string
	for _, s := range list {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// clip shortens text quoted in error messages.
func clip(s string) string { return clipN(s, 60) }

// clipN shortens s to at most limit runes, marking the cut with "…".
func clipN(s string, limit int) string {
	r := []rune(s)
	if len(r) <= limit {
		return s
	}
	return string(r[:limit]) + "…"
}
