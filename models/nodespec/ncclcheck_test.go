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

// cards is shape with nics fabric cards of gbps each.
func cards(nodes, gpus int, interconnect string, nics, gbps int) Cluster {
	c := shape(nodes, gpus, interconnect)
	c.NICs, c.NICGbps = nics, gbps
	return c
}

// X4: real nccl-tests output of NCCL's default algorithm, read against the
// hierarchical bound B·N(R−1)/(R(N−1)) with B = the machine's NICs × their
// line rate.
func TestReadAllReduce(t *testing.T) {
	// GCP A3 Mega, 2 × 8 H100, default algorithm; A3 Mega machines have
	// 8 × 200 Gbit/s GPU NICs: B = 200 GB/s, 16 ranks: 200·2·15/16 = 375 GB/s.
	h100 := readFixture(t, "nccl_all_reduce_perf_2node_16x_h100_sweep.txt") // 338.82 GB/s at 8 GB
	// OCI BM.GPU4.8, 2 × 8 A100, 16 × 100 Gbit/s RDMA NICs: B = 200 GB/s, 375 GB/s.
	a100 := readFixture(t, "nccl_all_reduce_perf_2node_16x_a100_10G.txt") // 222.88 GB/s at 10 GB
	// CSCS Alps, 2 × 1 GH200, one 200 Gbit/s Slingshot NIC each: B = 25 GB/s,
	// 2 ranks: 25·2·1/2 = 25 GB/s.
	gh200 := readFixture(t, "nccl_all_reduce_perf_2node_2x_gh200_v2.18.2.txt") // 22.88 GB/s at 128 MB
	tests := []struct {
		name     string
		c        Cluster
		output   string
		busbw    float64
		expected float64
		percent  int
		warn     bool
		err      string
	}{
		{"a3 mega 8 x 200G", cards(2, 8, InterconnectRoCE, 8, 200), h100, 338.82, 375, 90, false, ""},
		// The same reading on cards twice as fast (8 × 400G) is half of
		// what they allow: flagged.
		{"declared 8 x 400G", cards(2, 8, InterconnectInfiniBand, 8, 400), h100, 338.82, 750, 45, true, ""},
		{"oci 16 x 100G", cards(2, 8, InterconnectRoCE, 16, 100), a100, 222.88, 375, 59, false, ""},
		{"alps gh200 1 x 200G", cards(2, 1, InterconnectInfiniBand, 1, 200), gh200, 22.88, 25, 91, false, ""},
		{"fewer ranks than GPUs", cards(3, 8, InterconnectRoCE, 8, 200), h100, 0, 0, 0, false, "the test ran on 16 GPUs, the cluster has 24"},
		{"failed run", cards(2, 8, InterconnectRoCE, 8, 200), "mpirun: command not found\n", 0, 0, 0, false, "unrecognised"},
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
			if r.BusBW < tt.busbw-0.01 || r.BusBW > tt.busbw+0.01 || r.ExpectedBusBW < tt.expected-1e-9 || r.ExpectedBusBW > tt.expected+1e-9 ||
				r.Percent != tt.percent || (r.Warning != "") != tt.warn {
				t.Errorf("got %+v, want busbw %.2f of %.2f, %d %%, warning %v", r, tt.busbw, tt.expected, tt.percent, tt.warn)
			}
			if r.AdvertisedGbps != tt.c.NICs*tt.c.NICGbps {
				t.Errorf("advertised %d Gbit/s, want the NICs' %d", r.AdvertisedGbps, tt.c.NICs*tt.c.NICGbps)
			}
		})
	}
	trunc := h100[:strings.Index(h100, "# Out of bounds")]
	if _, err := cards(2, 8, InterconnectRoCE, 8, 200).ReadAllReduce(trunc); !errors.Is(err, ErrTruncated) {
		t.Errorf("a run cut short: %v, want ErrTruncated", err)
	}
}

func TestExpectedBusBW(t *testing.T) {
	for _, tt := range []struct {
		c    Cluster
		want float64
	}{
		// B = 8 × 400 Gbit/s = 400 GB/s; 2 machines, 16 ranks: 400·2·15/16.
		{cards(2, 8, InterconnectInfiniBand, 8, 400), 750},
		{cards(4, 8, InterconnectInfiniBand, 8, 400), 400 * 4 * 31 / (32 * 3.0)},
		// RoCE is judged by its cards, not by a rate per GPU: 16 × 100G.
		{cards(2, 8, InterconnectRoCE, 16, 100), 200 * 2 * 15 / 16.0},
		// The overlay is held to its floor.
		{shape(2, 1, InterconnectEthernet), OverlayFloorGBps},
		// InfiniBand whose cards nobody said: the overlay's floor, no more.
		{shape(2, 8, InterconnectInfiniBand), OverlayFloorGBps},
	} {
		if got := tt.c.ExpectedBusBW(); got < tt.want-1e-9 || got > tt.want+1e-9 {
			t.Errorf("%d × %d %s (%d × %d G): %v, want %v", len(tt.c.Nodes), tt.c.GPUsPerNode, tt.c.Interconnect, tt.c.NICs, tt.c.NICGbps, got, tt.want)
		}
	}
}

// X4 on the overlay: a warning below the floor, none above it.
func TestAllReduceOverlayFloorWarning(t *testing.T) {
	c := shape(2, 1, InterconnectEthernet)
	out := readFixture(t, "nccl_all_reduce_perf_2node_2x_gh200_v2.18.2.txt") // 22.88 GB/s: far above any overlay
	r, err := c.ReadAllReduce(out)
	if err != nil || r.Warning != "" || r.AdvertisedGbps != OverlayGbps || r.ExpectedBusBW != OverlayFloorGBps {
		t.Fatalf("overlay above its floor: %+v, %v", r, err)
	}
}
