package readiness

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxHostlist bounds how many names one hostlist expression may expand to,
// and how many node rows one Slurm output may hold, so a hostile or corrupt
// expression such as "n[0-999999999]" is an error rather than a memory
// blow-up. It is far above the 64 nodes a cluster has.
const MaxHostlist = 100_000

// ExpandHostlist expands a Slurm hostlist expression into host names, in
// order:
//
//	node-[0-3]         node-0 node-1 node-2 node-3
//	n[01-10]           n01 … n10 (zero padding follows the lower bound's width)
//	a[1-2,5],b3        a1 a2 a5 b3
//	rack[1-2]-gpu[1-2] rack1-gpu1 rack1-gpu2 rack2-gpu1 rack2-gpu2
//
// Names may hold letters, digits, '-', '_' and '.'. Unbalanced or nested
// brackets, empty items, descending ranges and expansions beyond
// MaxHostlist names are errors.
func ExpandHostlist(expr string) ([]string, error) {
	parts, err := splitTopLevel(expr)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range parts {
		names, err := expandOne(p, MaxHostlist-len(out))
		if err != nil {
			return nil, fmt.Errorf("hostlist %q: %w", expr, err)
		}
		out = append(out, names...)
	}
	return out, nil
}

// splitTopLevel splits on commas that are outside brackets.
func splitTopLevel(expr string) ([]string, error) {
	if expr == "" {
		return nil, fmt.Errorf("empty hostlist")
	}
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(expr); i++ {
		switch expr[i] {
		case '[':
			depth++
			if depth > 1 {
				return nil, fmt.Errorf("hostlist %q: nested '['", expr)
			}
		case ']':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("hostlist %q: unbalanced ']'", expr)
			}
		case ',':
			if depth == 0 {
				parts = append(parts, expr[start:i])
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("hostlist %q: unclosed '['", expr)
	}
	parts = append(parts, expr[start:])
	for _, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("hostlist %q: empty item", expr)
		}
	}
	return parts, nil
}

// expandOne expands one host expression (no top-level commas), producing at
// most limit names.
func expandOne(p string, limit int) ([]string, error) {
	names := []string{""}
	for p != "" {
		open := strings.IndexByte(p, '[')
		if open < 0 {
			if err := checkNameChars(p); err != nil {
				return nil, err
			}
			for i := range names {
				names[i] += p
			}
			break
		}
		prefix := p[:open]
		if err := checkNameChars(prefix); err != nil {
			return nil, err
		}
		end := strings.IndexByte(p[open:], ']')
		if end < 0 {
			return nil, fmt.Errorf("unclosed '['")
		}
		values, err := expandRanges(p[open+1:open+end], limit)
		if err != nil {
			return nil, err
		}
		if len(names)*len(values) > limit {
			return nil, fmt.Errorf("expands to more than %d names", MaxHostlist)
		}
		next := make([]string, 0, len(names)*len(values))
		for _, n := range names {
			for _, v := range values {
				next = append(next, n+prefix+v)
			}
		}
		names = next
		p = p[open+end+1:]
	}
	if len(names) == 1 && names[0] == "" {
		return nil, fmt.Errorf("empty host name")
	}
	return names, nil
}

// expandRanges expands the inside of brackets: "0-3", "01-10", "2,4-7".
func expandRanges(s string, limit int) ([]string, error) {
	if s == "" {
		return nil, fmt.Errorf("empty brackets")
	}
	var out []string
	for _, item := range strings.Split(s, ",") {
		loS, hiS, isRange := strings.Cut(item, "-")
		if !isRange {
			hiS = loS
		}
		lo, err := rangeNumber(loS)
		if err != nil {
			return nil, err
		}
		hi, err := rangeNumber(hiS)
		if err != nil {
			return nil, err
		}
		if hi < lo {
			return nil, fmt.Errorf("descending range %q", item)
		}
		if hi-lo+1 > limit-len(out) {
			return nil, fmt.Errorf("expands to more than %d names", MaxHostlist)
		}
		width := len(loS)
		for v := lo; v <= hi; v++ {
			out = append(out, fmt.Sprintf("%0*d", width, v))
		}
	}
	return out, nil
}

// rangeNumber parses one bound of a bracket range: 1 to 9 decimal digits.
func rangeNumber(s string) (int, error) {
	if s == "" || len(s) > 9 {
		return 0, fmt.Errorf("bad range bound %q", s)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("bad range bound %q", s)
		}
	}
	return strconv.Atoi(s)
}

// checkNameChars accepts the characters host names and node ids use.
func checkNameChars(s string) error {
	for i := 0; i < len(s); i++ {
		if !isNameChar(s[i]) {
			return fmt.Errorf("bad character %q in host name", s[i])
		}
	}
	return nil
}

func isNameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '-' || c == '_' || c == '.'
}
