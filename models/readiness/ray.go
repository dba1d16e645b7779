package readiness

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// RayGroup is one line under Healthy:, Active: or Idle: in `ray status`:
// Count nodes of one node type. A cluster started by hand (`ray start`)
// lists each node as its own type "node_<node id>" with Count 1; an
// autoscaling cluster groups nodes by its configured types
// ("2 p3.2xlarge").
type RayGroup struct {
	Section string // "healthy" (Ray 1.x and 2.x before 2.8), "active" or "idle"
	Count   int
	Name    string
}

// RayStatus is what ParseRayStatus reads from `ray status` [-v].
type RayStatus struct {
	// Groups are the live node lines, in order.
	Groups []RayGroup
	// Nodes are the per-node headers of verbose output ("Node: <id or ip>").
	Nodes []string
	// Pending and Failures are the lines under "Pending:" and
	// "Recent failures:" without placeholders such as "(no failures)".
	Pending  []string
	Failures []string
	// Healthy is the sum of the Groups' counts.
	Healthy int
	// PendingCount counts pending nodes ("m4.4xlarge, 2 launching" is 2).
	PendingCount int
	// GPUs and UsedGPUs are the cluster "x/N GPU" usage line's N and x;
	// HasGPUs is false when the output has no GPU line.
	GPUs, UsedGPUs float64
	HasGPUs        bool
}

// ParseRayStatus parses the output of `ray status` or `ray status -v` of
// Ray 1.x (Healthy:/Pending:/Recent failures:, "Usage:"), of Ray 2.x up to
// 2.7 (the same, node types "node_<id>"), and of Ray 2.8+ (Active:/Idle:,
// "Total Usage:", per-node "Node:" sections in verbose mode). It also reads
// Ray 1.x's no-node-types form (" 2 node(s) with resources: {...}").
//
// The output must hold the "Node status" part and the "Resources" header
// that follows it (so a cut-off output cannot hide pending or failed nodes);
// otherwise the error wraps ErrTruncated. Text with no "Node status" (for
// example "No cluster status." or a connection error) wraps ErrFormat.
func ParseRayStatus(output string) (RayStatus, error) {
	var st RayStatus
	output, err := normalize(output)
	if err != nil {
		return st, fmt.Errorf("ray: %w", err)
	}
	const (
		partNone = iota
		partNodes
		partResources
	)
	part, section := partNone, ""
	sawNodeStatus, sawLiveSection, sawResources := false, false, false
	inNodeDetail := false
	for i, raw := range strings.Split(output, "\n") {
		n := i + 1
		line := strings.TrimRight(raw, " \t")
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
			continue
		case strings.Trim(trimmed, "-") == "" || strings.HasPrefix(trimmed, "========"):
			continue // separators and the "==== Autoscaler status: … ====" banner
		case trimmed == "Node status":
			part, section, sawNodeStatus = partNodes, "", true
			continue
		case trimmed == "Resources":
			part, section, sawResources = partResources, "", true
			continue
		}
		indented := line[0] == ' ' || line[0] == '\t'
		if !indented {
			// A section label or a top-level line.
			if part == partResources && strings.HasPrefix(trimmed, "Node: ") {
				st.Nodes = append(st.Nodes, strings.TrimSpace(strings.TrimPrefix(trimmed, "Node: ")))
				inNodeDetail, section = true, ""
				continue
			}
			if strings.HasSuffix(trimmed, ":") {
				section = strings.ToLower(strings.TrimSuffix(trimmed, ":"))
				if part == partNodes && (section == "healthy" || section == "active" || section == "idle") {
					sawLiveSection = true
				}
				continue
			}
			if part == partNone {
				continue // "GCS request time: …" and other preamble
			}
			if part == partResources {
				continue // unknown top-level lines in Resources are not ours to judge
			}
			return st, fmt.Errorf("ray: %w: line %d %q is not part of ray status", ErrFormat, n, clip(trimmed))
		}
		if strings.HasPrefix(trimmed, "(") && strings.HasSuffix(trimmed, ")") {
			continue // placeholders: "(no pending nodes)", "(no failures)", …
		}
		switch part {
		case partNodes:
			switch section {
			case "healthy", "active", "idle":
				g, err := parseRayGroup(trimmed, section)
				if err != nil {
					return st, fmt.Errorf("ray: %w: line %d: %v", ErrFormat, n, err)
				}
				st.Groups = append(st.Groups, g)
				st.Healthy += g.Count
			case "pending":
				st.Pending = append(st.Pending, trimmed)
				st.PendingCount += pendingCount(trimmed)
			case "recent failures":
				st.Failures = append(st.Failures, trimmed)
			case "":
				// Ray 1.x without node types: " 2 node(s) with resources: {…}"
				g, err := parseRayGroup(trimmed, "healthy")
				if err != nil || !strings.HasPrefix(g.Name, "node(s) with resources") {
					return st, fmt.Errorf("ray: %w: line %d %q is not a node line", ErrFormat, n, clip(trimmed))
				}
				sawLiveSection = true
				st.Groups = append(st.Groups, g)
				st.Healthy += g.Count
			}
		case partResources:
			if inNodeDetail || (section != "usage" && section != "total usage") {
				continue
			}
			if used, total, ok := parseGPUUsage(trimmed); ok {
				st.UsedGPUs, st.GPUs, st.HasGPUs = used, total, true
			}
		}
	}
	switch {
	case !sawNodeStatus:
		return st, fmt.Errorf("ray: %w: no \"Node status\" section in %q", ErrFormat, clip(strings.TrimSpace(output)))
	case !sawLiveSection:
		return st, fmt.Errorf("ray: %w: no Healthy/Active section", ErrTruncated)
	case !sawResources:
		return st, fmt.Errorf("ray: %w: no Resources section after the node status", ErrTruncated)
	}
	return st, nil
}

// parseRayGroup parses "<count> <node type or node_id>".
func parseRayGroup(s, section string) (RayGroup, error) {
	countS, name, ok := strings.Cut(s, " ")
	count, err := strconv.Atoi(countS)
	name = strings.TrimSpace(name)
	if !ok || err != nil || count < 0 || count > MaxHostlist || name == "" {
		return RayGroup{}, fmt.Errorf("%q is not \"<count> <node>\"", clip(s))
	}
	return RayGroup{Section: section, Count: count, Name: name}, nil
}

// pendingCount reads "<type>, N launching" as N nodes; any other pending
// line ("<ip>: <type>, <status>") is one node.
func pendingCount(s string) int {
	if _, rest, ok := strings.Cut(s, ", "); ok && strings.HasSuffix(rest, " launching") {
		if n, err := strconv.Atoi(strings.TrimSuffix(rest, " launching")); err == nil && n > 0 && n <= MaxHostlist {
			return n
		}
	}
	return 1
}

// parseGPUUsage reads " 0.0/4.0 GPU" and " 4.0/4.0 GPU (4.0 used of 4.0
// reserved in placement groups)".
func parseGPUUsage(s string) (used, total float64, ok bool) {
	f := strings.Fields(s)
	if len(f) < 2 || f[1] != "GPU" {
		return 0, 0, false
	}
	u, t, found := strings.Cut(f[0], "/")
	if !found {
		return 0, 0, false
	}
	used, err1 := strconv.ParseFloat(u, 64)
	total, err2 := strconv.ParseFloat(t, 64)
	if err1 != nil || err2 != nil || math.IsNaN(total) || math.IsInf(total, 0) || total < 0 || total > 1e6 {
		return 0, 0, false
	}
	return used, total, true
}

// Ray judges `ray status` [-v] output (S2: every node listed by ray status).
//
// `ray status` names nodes by node id or IP, never by our node names, so
// expected holds what the caller expects to see there: node ids (bare hex or
// "node_<hex>") or IP addresses. An expected string matches a live node when
// a Healthy/Active/Idle line or a verbose "Node: …" header contains it as a
// whole token: the characters on either side of it must not be letters,
// digits or '.', so "10.0.0.1" does not match "10.0.0.15", and a node id
// must be given in full. An expected string that matches no live line but a
// pending or recent-failure line fails with that line as its reason; one
// that matches nothing is Missing.
//
// The report is Ready when every expected string matches a live node, the
// live count (the sum of the Healthy/Active/Idle counts) reaches
// len(expected), and nothing is pending and no failure is recent. Pending
// and failure lines are kept in Report.Pending and Report.Failures;
// Report.TotalGPUs is the N of the cluster's "x/N GPU" usage line.
//
// With no expected strings every live line is listed in Nodes and the
// report is Ready when at least one node is live and nothing is pending or
// failed; use [RayCount] to require a number of nodes without knowing their
// ids.
func Ray(output string, expected []string) (Report, error) {
	expected, err := cleanExpected(expected)
	if err != nil {
		return Report{}, err
	}
	st, err := ParseRayStatus(output)
	if err != nil {
		return Report{}, err
	}
	r := rayReport(st)
	if len(expected) == 0 {
		r.Ready = st.Healthy > 0 && len(st.Pending) == 0 && len(st.Failures) == 0
		r.Summary = raySummary(r, st, 0)
		return r, nil
	}
	r.Nodes = nil
	for _, e := range expected {
		res := NodeResult{Node: e}
		switch {
		case matchAny(e, st.Groups, st.Nodes, &res):
			res.OK = true
		case matchLines(e, st.Pending):
			res.State, res.Reason = "pending", "pending: "+firstMatch(e, st.Pending)
		case matchLines(e, st.Failures):
			res.State, res.Reason = "failed", "recent failure: "+firstMatch(e, st.Failures)
		default:
			r.Missing = append(r.Missing, e)
			continue
		}
		r.Nodes = append(r.Nodes, res)
	}
	r.Ready = len(r.Missing) == 0 && len(r.Failing()) == 0 && st.Healthy >= len(expected) &&
		len(st.Pending) == 0 && len(st.Failures) == 0
	r.Summary = raySummary(r, st, len(expected))
	return r, nil
}

// RayCount judges `ray status` output when the caller knows how many nodes
// to expect but not their ids: Ready when at least nodes nodes are live
// (Healthy/Active/Idle) and nothing is pending or recently failed. Nodes
// lists the live lines.
func RayCount(output string, nodes int) (Report, error) {
	if nodes <= 0 {
		return Report{}, fmt.Errorf("%w: RayCount needs a positive node count, got %d", ErrExpected, nodes)
	}
	st, err := ParseRayStatus(output)
	if err != nil {
		return Report{}, err
	}
	r := rayReport(st)
	r.Ready = st.Healthy >= nodes && len(st.Pending) == 0 && len(st.Failures) == 0
	r.Summary = raySummary(r, st, nodes)
	return r, nil
}

// rayReport fills the parts of a Ray report that do not depend on expected
// nodes; Nodes lists the live groups.
func rayReport(st RayStatus) Report {
	r := Report{
		Software: "ray",
		Pending:  st.Pending,
		Failures: st.Failures,
		Healthy:  st.Healthy,
	}
	if st.HasGPUs {
		r.TotalGPUs = int(math.Floor(st.GPUs))
	}
	for _, g := range st.Groups {
		r.Nodes = append(r.Nodes, NodeResult{Node: g.Name, OK: true, State: g.Section})
	}
	return r
}

func raySummary(r Report, st RayStatus, want int) string {
	live := fmt.Sprintf("%d live nodes", st.Healthy)
	if want > 0 {
		live += fmt.Sprintf(", %d expected", want)
	}
	if r.Ready {
		if st.HasGPUs {
			live += ", " + gpus(r.TotalGPUs)
		}
		return "ready: " + live
	}
	total := want
	if total == 0 {
		total = len(r.Nodes)
	}
	return "not ready: " + strings.Join(append([]string{live}, problems(r, total)...), "; ")
}

// matchAny reports whether e names a live node and records its state.
func matchAny(e string, groups []RayGroup, nodes []string, res *NodeResult) bool {
	for _, g := range groups {
		if tokenMatch(g.Name, e) {
			res.State = g.Section
			return true
		}
	}
	for _, n := range nodes {
		if tokenMatch(n, e) {
			res.State = "healthy"
			return true
		}
	}
	return false
}

func matchLines(e string, lines []string) bool { return firstMatch(e, lines) != "" }

func firstMatch(e string, lines []string) string {
	for _, l := range lines {
		if tokenMatch(l, e) {
			return l
		}
	}
	return ""
}

// tokenMatch reports whether want occurs in s with no letter, digit or '.'
// right before or after it.
func tokenMatch(s, want string) bool {
	if want == "" {
		return false
	}
	for from := 0; from <= len(s)-len(want); {
		i := strings.Index(s[from:], want)
		if i < 0 {
			return false
		}
		i += from
		end := i + len(want)
		if (i == 0 || !isTokenChar(s[i-1])) && (end == len(s) || !isTokenChar(s[end])) {
			return true
		}
		from = i + 1
	}
	return false
}

func isTokenChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.'
}
