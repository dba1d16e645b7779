package nodespec

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Errors returned (wrapped) by the parsers; test with errors.Is.
var (
	// ErrEmpty: the output is empty or only white space.
	ErrEmpty = errors.New("nodespec: empty output")
	// ErrFormat: the output is not in a format the parser knows.
	ErrFormat = errors.New("nodespec: unrecognised output")
	// ErrTruncated: the output starts in a known format but is cut short.
	ErrTruncated = errors.New("nodespec: truncated output")
	// ErrTestFailed: nccl-tests reported a failure (a "Test ... failure"
	// line, wrong results or out-of-bounds values).
	ErrTestFailed = errors.New("nodespec: nccl test failed")
)

// AllReduceResult is what nccl-tests' all_reduce_perf printed. The parser
// reads any nccl-tests collective with the same table (all_gather_perf,
// …), old and new formats (with or without the root column, the 2.18
// "version" and "Collective test" lines).
type AllReduceResult struct {
	// Version is the nccl-tests version ("2.18.2"), when the output says.
	Version string
	// NThreads, NGPUs (GPUs per process, -g), MinBytes, MaxBytes, Warmup
	// and Iters come from the header line; 0 when absent.
	NThreads, NGPUs    int
	MinBytes, MaxBytes int64
	Warmup, Iters      int
	// Devices lists the ranks from "# Using devices", in order.
	Devices []TestDevice
	// Rows are the measurements, one per message size (and data type), in
	// the order printed.
	Rows []AllReduceRow
	// OutOfBounds is the "Out of bounds values" count, and OutOfBoundsOK
	// whether the line said OK; -1 and false when the line is missing.
	OutOfBounds   int
	OutOfBoundsOK bool
	// AvgBusBW is the "Avg bus bandwidth" in GB/s.
	AvgBusBW float64
	// Failures holds "Test ... failure" lines, if any.
	Failures []string
}

// TestDevice is one "#  Rank  N Group G Pid P on HOST device D [BUS] NAME" line.
type TestDevice struct {
	Rank   int
	Group  int
	PID    int
	Host   string
	Device int
	BusID  string
	Name   string
}

// AllReduceRow is one message size.
type AllReduceRow struct {
	SizeBytes int64
	Count     int64
	Type      string // "float", …
	RedOp     string // "sum", or "none" for collectives without one
	Root      int    // -1 for rootless collectives; -1 when the column is absent
	// OutOfPlace and InPlace are the two measurements of the row.
	OutOfPlace, InPlace Measurement
}

// Measurement is one half of a row.
type Measurement struct {
	TimeUS float64 // microseconds per operation
	AlgBW  float64 // GB/s: size / time
	BusBW  float64 // GB/s: algbw corrected for the collective; compare with link speed
	// Wrong is the #wrong count, or -1 when printed as N/A (validation off).
	Wrong int64
}

// Largest returns the row with the largest message size (the last such row
// when sizes repeat), or the zero row when there are none. Its BusBW is the
// best single figure for a link's bandwidth.
func (r AllReduceResult) Largest() AllReduceRow {
	var best AllReduceRow
	for i, row := range r.Rows {
		if i == 0 || row.SizeBytes >= best.SizeBytes {
			best = row
		}
	}
	return best
}

// PeakBusBW returns the highest bus bandwidth of any row, in or out of
// place, in GB/s.
func (r AllReduceResult) PeakBusBW() float64 {
	peak := 0.0
	for _, row := range r.Rows {
		peak = max(peak, row.OutOfPlace.BusBW, row.InPlace.BusBW)
	}
	return peak
}

// Hosts returns the distinct hosts of Devices in order of first appearance.
func (r AllReduceResult) Hosts() []string {
	var hosts []string
	seen := map[string]bool{}
	for _, d := range r.Devices {
		if !seen[d.Host] {
			seen[d.Host] = true
			hosts = append(hosts, d.Host)
		}
	}
	return hosts
}

// Wrong returns the total #wrong over every row (N/A counts as 0).
func (r AllReduceResult) Wrong() int64 {
	var n int64
	for _, row := range r.Rows {
		n += max(row.OutOfPlace.Wrong, 0) + max(row.InPlace.Wrong, 0)
	}
	return n
}

// GBpsToGbitps converts the GB/s nccl-tests prints to Gbit/s, the unit
// offers advertise links in.
func GBpsToGbitps(gbps float64) float64 { return gbps * 8 }

var (
	ncclVersionRE = regexp.MustCompile(`^#\s*nccl-tests version (\S+)`)
	ncclHeaderRE  = regexp.MustCompile(`^#\s*nThread (\d+) nGpus (\d+) minBytes (\d+) maxBytes (\d+)`)
	ncclItersRE   = regexp.MustCompile(`warmup iters: (\d+) iters: (\d+)`)
	ncclDeviceRE  = regexp.MustCompile(`^#\s+Rank\s+(\d+)\s+Group\s+(\d+)\s+Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\](.*)$`)
	ncclOOBRE     = regexp.MustCompile(`^#\s*Out of bounds values\s*:\s*(\d+)\s*(\S*)`)
	ncclAvgRE     = regexp.MustCompile(`^#\s*Avg bus bandwidth\s*:\s*(\S+)`)
	ncclFailRE    = regexp.MustCompile(`Test \w+ failure|Test failure`)
)

// ParseAllReduce parses the output of nccl-tests' all_reduce_perf (X4).
// Lines it does not know, such as NCCL_DEBUG=INFO logging, are skipped.
//
// It returns an error wrapping ErrEmpty for empty output, ErrFormat when no
// measurement row is found, ErrTruncated when the rows are there but the
// "Avg bus bandwidth" summary is not, and ErrTestFailed when the test
// reported failures, wrong results or out-of-bounds values. With
// ErrTruncated and ErrTestFailed the result parsed so far is returned too.
func ParseAllReduce(output string) (AllReduceResult, error) {
	r := AllReduceResult{OutOfBounds: -1}
	if strings.TrimSpace(output) == "" {
		return r, fmt.Errorf("all_reduce_perf: %w", ErrEmpty)
	}
	haveAvg := false
	for line := range strings.Lines(output) {
		line = strings.TrimRight(line, "\r\n")
		if !strings.HasPrefix(line, "#") {
			if row, ok := parseAllReduceRow(line); ok {
				r.Rows = append(r.Rows, row)
			} else if ncclFailRE.MatchString(line) {
				r.Failures = append(r.Failures, strings.TrimSpace(line))
			}
			continue
		}
		if m := ncclVersionRE.FindStringSubmatch(line); m != nil {
			r.Version = m[1]
		} else if m := ncclHeaderRE.FindStringSubmatch(line); m != nil {
			r.NThreads, _ = strconv.Atoi(m[1])
			r.NGPUs, _ = strconv.Atoi(m[2])
			r.MinBytes, _ = strconv.ParseInt(m[3], 10, 64)
			r.MaxBytes, _ = strconv.ParseInt(m[4], 10, 64)
			if it := ncclItersRE.FindStringSubmatch(line); it != nil {
				r.Warmup, _ = strconv.Atoi(it[1])
				r.Iters, _ = strconv.Atoi(it[2])
			}
		} else if m := ncclDeviceRE.FindStringSubmatch(line); m != nil {
			d := TestDevice{Host: m[4], BusID: m[6], Name: strings.TrimSpace(m[7])}
			d.Rank, _ = strconv.Atoi(m[1])
			d.Group, _ = strconv.Atoi(m[2])
			d.PID, _ = strconv.Atoi(m[3])
			d.Device, _ = strconv.Atoi(m[5])
			r.Devices = append(r.Devices, d)
		} else if m := ncclOOBRE.FindStringSubmatch(line); m != nil {
			r.OutOfBounds, _ = strconv.Atoi(m[1])
			r.OutOfBoundsOK = m[2] == "OK"
		} else if m := ncclAvgRE.FindStringSubmatch(line); m != nil {
			v, err := strconv.ParseFloat(m[1], 64)
			if err != nil {
				return r, fmt.Errorf("all_reduce_perf: avg bus bandwidth %q: %w", m[1], ErrFormat)
			}
			r.AvgBusBW, haveAvg = v, true
		}
	}
	switch {
	case len(r.Rows) == 0 && len(r.Failures) > 0:
		return r, fmt.Errorf("all_reduce_perf: %s: %w", r.Failures[0], ErrTestFailed)
	case len(r.Rows) == 0:
		return r, fmt.Errorf("all_reduce_perf: no measurement rows: %w", ErrFormat)
	case len(r.Failures) > 0:
		return r, fmt.Errorf("all_reduce_perf: %s: %w", r.Failures[0], ErrTestFailed)
	case !haveAvg:
		return r, fmt.Errorf("all_reduce_perf: no \"Avg bus bandwidth\" line after %d rows: %w", len(r.Rows), ErrTruncated)
	case r.Wrong() > 0:
		return r, fmt.Errorf("all_reduce_perf: %d wrong results: %w", r.Wrong(), ErrTestFailed)
	case r.OutOfBounds > 0 || (r.OutOfBounds == 0 && !r.OutOfBoundsOK):
		return r, fmt.Errorf("all_reduce_perf: %d out-of-bounds values: %w", r.OutOfBounds, ErrTestFailed)
	}
	return r, nil
}

// parseAllReduceRow parses one measurement row:
//
//	size count type redop [root] time algbw busbw #wrong time algbw busbw #wrong
func parseAllReduceRow(line string) (AllReduceRow, bool) {
	f := strings.Fields(line)
	var row AllReduceRow
	switch len(f) {
	case 13:
		root, err := strconv.Atoi(f[4])
		if err != nil {
			return row, false
		}
		row.Root = root
		f = append(f[:4:4], f[5:]...)
	case 12:
		row.Root = -1
	default:
		return row, false
	}
	var err error
	if row.SizeBytes, err = strconv.ParseInt(f[0], 10, 64); err != nil || row.SizeBytes < 0 {
		return row, false
	}
	if row.Count, err = strconv.ParseInt(f[1], 10, 64); err != nil || row.Count < 0 {
		return row, false
	}
	if !isWord(f[2]) || !isWord(f[3]) {
		return row, false
	}
	row.Type, row.RedOp = f[2], f[3]
	var ok1, ok2 bool
	row.OutOfPlace, ok1 = parseMeasurement(f[4:8])
	row.InPlace, ok2 = parseMeasurement(f[8:12])
	return row, ok1 && ok2
}

func parseMeasurement(f []string) (Measurement, bool) {
	var m Measurement
	var err error
	if m.TimeUS, err = strconv.ParseFloat(f[0], 64); err != nil {
		return m, false
	}
	if m.AlgBW, err = strconv.ParseFloat(f[1], 64); err != nil {
		return m, false
	}
	if m.BusBW, err = strconv.ParseFloat(f[2], 64); err != nil {
		return m, false
	}
	if f[3] == "N/A" {
		m.Wrong = -1
	} else if m.Wrong, err = strconv.ParseInt(f[3], 10, 64); err != nil {
		return m, false
	}
	return m, true
}

// isWord reports whether s is an identifier such as "float", "bfloat16" or
// "sum".
func isWord(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !('a' <= r && r <= 'z') && !('A' <= r && r <= 'Z') && !('0' <= r && r <= '9') && r != '_' {
			return false
		}
	}
	return true
}
