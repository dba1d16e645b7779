package nodespec

import (
	"errors"
	"strings"
	"testing"
)

func shape(nodes, gpus int, interconnect string) Cluster {
	c := Cluster{GPUsPerNode: gpus, Interconnect: interconnect}
	for i := range nodes {
		c.Nodes = append(c.Nodes, Node{Rank: i, Name: NodeName(i)})
	}
	return c
}

// X4: real nccl-tests output read against what the interconnect
// advertises for the cluster's shape.
func TestReadAllReduce(t *testing.T) {
	h100 := readFixture(t, "nccl_all_reduce_perf_2node_16x_h100_sweep.txt") // 2 × 8 H100, busbw 338.82 GB/s at 8 GB
	a100 := readFixture(t, "nccl_all_reduce_perf_2node_16x_a100_10G.txt")   // 2 × 8 A100, one 10 GB size
	tests := []struct {
		name    string
		c       Cluster
		output  string
		busbw   float64
		percent int
		warn    bool
		err     string
	}{
		// RoCE: 8 × 200 Gbit/s = 200 GB/s per node; 2 nodes, 16 ranks: 375 GB/s.
		{"roce at 90%", shape(2, 8, InterconnectRoCE), h100, 338.82, 90, false, ""},
		// InfiniBand: 8 × 400 Gbit/s = 400 GB/s per node: 750 GB/s.
		{"infiniband at 45%", shape(2, 8, InterconnectInfiniBand), h100, 338.82, 45, true, ""},
		{"one size", shape(2, 8, InterconnectRoCE), a100, 222.88, 59, false, ""},
		{"fewer ranks than GPUs", shape(3, 8, InterconnectRoCE), h100, 0, 0, false, "the test ran on 16 GPUs, the cluster has 24"},
		{"failed run", shape(2, 8, InterconnectRoCE), "mpirun: command not found\n", 0, 0, false, "unrecognised"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := tt.c.ReadAllReduce(tt.output)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.BusBW < tt.busbw-0.01 || r.BusBW > tt.busbw+0.01 || r.Percent != tt.percent || (r.Warning != "") != tt.warn {
				t.Errorf("got %+v, want busbw %.2f, %d %%, warning %v", r, tt.busbw, tt.percent, tt.warn)
			}
		})
	}
	trunc := h100[:strings.Index(h100, "# Out of bounds")]
	if _, err := shape(2, 8, InterconnectRoCE).ReadAllReduce(trunc); !errors.Is(err, ErrTruncated) {
		t.Errorf("a run cut short: %v, want ErrTruncated", err)
	}
}

func TestExpectedBusBW(t *testing.T) {
	for _, tt := range []struct {
		c    Cluster
		want float64
	}{
		{shape(2, 8, InterconnectInfiniBand), 750},
		{shape(4, 8, InterconnectInfiniBand), 400 * 4 * 31 / (32 * 3.0)},
		{shape(2, 1, InterconnectEthernet), 0.25 * 2 * 1 / (2 * 1.0)},
	} {
		if got := tt.c.ExpectedBusBW(); got < tt.want-1e-9 || got > tt.want+1e-9 {
			t.Errorf("%d × %d %s: %v, want %v", len(tt.c.Nodes), tt.c.GPUsPerNode, tt.c.Interconnect, got, tt.want)
		}
	}
}
