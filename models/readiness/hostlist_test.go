package readiness

import (
	"fmt"
	"slices"
	"testing"
)

func TestExpandHostlist(t *testing.T) {
	seq := func(format string, from, to int) []string {
		var out []string
		for i := from; i <= to; i++ {
			out = append(out, fmt.Sprintf(format, i))
		}
		return out
	}
	tests := []struct {
		in   string
		want []string
	}{
		{"g-11", []string{"g-11"}},
		{"node-[0-3]", []string{"node-0", "node-1", "node-2", "node-3"}},
		{"compute-dy-[1-10]", seq("compute-dy-%d", 1, 10)},
		{"a[1-2,5],b3", []string{"a1", "a2", "a5", "b3"}},
		{"n[01-10]", seq("n%02d", 1, 10)},
		{"n[8-12]", seq("n%d", 8, 12)},
		{"compute[001-003]", []string{"compute001", "compute002", "compute003"}},
		{"adev[2,4-7]", []string{"adev2", "adev4", "adev5", "adev6", "adev7"}},
		{"queue1-dy-c-1-[1-15],queue1-dy-c-2-[1-15]", append(seq("queue1-dy-c-1-%d", 1, 15), seq("queue1-dy-c-2-%d", 1, 15)...)},
		{"rack[1-2]-gpu[1-2]", []string{"rack1-gpu1", "rack1-gpu2", "rack2-gpu1", "rack2-gpu2"}},
		{"n[7]", []string{"n7"}},
		{"[1-2]", []string{"1", "2"}},
		{"host.example.com", []string{"host.example.com"}},
		{"a_b[1-2]c", []string{"a_b1c", "a_b2c"}},
	}
	for _, tt := range tests {
		got, err := ExpandHostlist(tt.in)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ExpandHostlist(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}

	// The fixture's 55-node drng@ list.
	got, err := ExpandHostlist("d[001-032],f[001-004,006-024]")
	if err != nil || len(got) != 55 || got[0] != "d001" || got[32] != "f001" || slices.Contains(got, "f005") {
		t.Errorf("drng@ list: %d names, %v", len(got), err)
	}
}

func TestExpandHostlistErrors(t *testing.T) {
	for _, in := range []string{
		"", "n[", "n]", "n[1-2", "n[3-1]", "n[]", "n[a-b]", "n[[1]]", "a,,b", ",a", "a,",
		"n[1,]", "n[-1]", "n[1-]", "n[0-999999]", "n[0-999]x[0-999]", "bad name", "n!", "n[1-2]]",
		"n[1234567890]",
	} {
		if got, err := ExpandHostlist(in); err == nil {
			t.Errorf("ExpandHostlist(%q) = %d names, want an error", in, len(got))
		}
	}
}
