package views

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

func csrfHeaders(token string) string {
	b, _ := json.Marshal(map[string]string{"X-CSRF-Token": token})
	return string(b)
}

func flashRole(k FlashKind) string {
	if k == FlashError {
		return "alert"
	}
	return "status"
}

// AcceleratorLabel turns "H100_80GB" into "H100 80GB".
func AcceleratorLabel(a string) string { return strings.ReplaceAll(a, "_", " ") }

// KindLabel names a machine kind for people.
func KindLabel(k string) string {
	switch k {
	case "vm":
		return "VM"
	case "bare_metal":
		return "Bare metal"
	case "container":
		return "Container"
	}
	return k
}

// InterconnectLabel names an interconnect for people.
func InterconnectLabel(i string) string {
	switch i {
	case "infiniband":
		return "InfiniBand"
	case "roce":
		return "RoCE"
	case "ethernet":
		return "Ethernet"
	}
	return i
}

// Shape is "2 × 8 × H100 80GB".
func Shape(nodes, gpus int, accel string) string {
	return fmt.Sprintf("%d × %d × %s", nodes, gpus, AcceleratorLabel(accel))
}

func ariaInvalid(problems map[string]string, field string) string {
	if _, ok := problems[field]; ok {
		return "true"
	}
	return "false"
}

// listSep follows item i of n in a sentence's list: ", " between items,
// ". " after the last.
func listSep(i, n int) string {
	if i == n-1 {
		return ". "
	}
	return ", "
}

// problemFields are the fields with a problem, in a stable order: those in
// order first, as the form shows them, then the rest alphabetically.
func problemFields(problems map[string]string, order ...string) []string {
	out := make([]string, 0, len(problems))
	for _, f := range order {
		if _, ok := problems[f]; ok && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	rest := make([]string, 0, len(problems))
	for f := range problems {
		if !slices.Contains(out, f) {
			rest = append(rest, f)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

// problemsAt are problems keyed by the id of their field in a form repeated
// per row, field+suffix (max_gpus-org_1), for the summary's links; order
// names the row's fields as shown, suffixed the same way (A4).
func problemsAt(problems map[string]string, suffix string, order ...string) (map[string]string, []string) {
	out := make(map[string]string, len(problems))
	for f, msg := range problems {
		out[f+suffix] = msg
	}
	ids := make([]string, len(order))
	for i, f := range order {
		ids[i] = f + suffix
	}
	return out, ids
}
