package nodespec

import (
	"fmt"
	"math"
)

// The automatic NCCL check (X4): once a cluster is ready, node-0 runs the
// all-reduce test of Commands (NCCLAllReduce) across every GPU, and its bus
// bandwidth is read against what the offer's interconnect advertises.

// NCCLWarnPercent: a measured bus bandwidth below this share of the
// expected one is flagged on the cluster.
const NCCLWarnPercent = 50

// AdvertisedGbps is what an interconnect advertises per node, in Gbit/s:
// InfiniBand one 400 Gbit/s (NDR) port per GPU, RoCE one 200 Gbit/s port
// per GPU, Ethernet the 2 Gbit/s of an encrypted overlay (O1).
func AdvertisedGbps(interconnect string, gpusPerNode int) int {
	switch interconnect {
	case InterconnectInfiniBand:
		return 400 * gpusPerNode
	case InterconnectRoCE:
		return 200 * gpusPerNode
	}
	return 2
}

// ExpectedBusBW is the all-reduce bus bandwidth, in GB/s, that the
// advertised network allows for the cluster's shape: with B GB/s per node,
// N nodes and R ranks a ring all-reduce limited by the network reaches
// busbw = B·N(R−1) / (R(N−1)) (nccl-tests' busbw is algbw·2(R−1)/R).
func (c Cluster) ExpectedBusBW() float64 {
	n, r := float64(len(c.Nodes)), float64(c.WorldSize())
	b := float64(AdvertisedGbps(c.interconnect(), c.GPUsPerNode)) / 8
	if n < 2 || r < 2 {
		return b
	}
	return b * n * (r - 1) / (r * (n - 1))
}

// NCCLReading is what the NCCL check measured.
type NCCLReading struct {
	BusBW          float64 // GB/s at the largest message size, the better of out-of-place and in-place
	ExpectedBusBW  float64 // GB/s, see ExpectedBusBW
	AdvertisedGbps int     // per node, see AdvertisedGbps
	Percent        int     // BusBW as a share of ExpectedBusBW, rounded down
	Warning        string  // set when Percent < NCCLWarnPercent
}

// ReadAllReduce reads the NCCL check's output (ParseAllReduce) for this
// cluster. An error means the test did not measure the whole cluster: it
// failed, was cut short, or ran on fewer ranks than the cluster has GPUs.
func (c Cluster) ReadAllReduce(output string) (NCCLReading, error) {
	res, err := ParseAllReduce(output)
	if err != nil {
		return NCCLReading{}, err
	}
	if len(res.Devices) > 0 && len(res.Devices) != c.WorldSize() {
		return NCCLReading{}, fmt.Errorf("the test ran on %d GPUs, the cluster has %d", len(res.Devices), c.WorldSize())
	}
	row := res.Largest()
	r := NCCLReading{BusBW: max(row.OutOfPlace.BusBW, row.InPlace.BusBW), ExpectedBusBW: c.ExpectedBusBW(),
		AdvertisedGbps: AdvertisedGbps(c.interconnect(), c.GPUsPerNode)}
	if r.ExpectedBusBW > 0 {
		r.Percent = int(math.Floor(100 * r.BusBW / r.ExpectedBusBW))
	}
	if r.Percent < NCCLWarnPercent {
		r.Warning = fmt.Sprintf("The interconnect delivers %d %% of what it advertises (%.1f of %.1f GB/s bus bandwidth): "+
			"expect slower multi-node training than the offer suggests.", r.Percent, r.BusBW, r.ExpectedBusBW)
	}
	return r, nil
}
