package nodespec

import (
	"fmt"
	"math"
)

// The automatic NCCL check (X4): once a cluster is ready, node-0 runs the
// all-reduce test of Commands (NCCLAllReduce) across every GPU with NCCL's
// default algorithm, and its bus bandwidth is read against what the
// machines' NICs allow for the cluster's shape (ExpectedBusBW, in
// fabric.go).

// NCCLWarnPercent: a measured bus bandwidth below this share of the
// expected one is flagged on the cluster.
const NCCLWarnPercent = 50

// NCCLReading is what the NCCL check measured.
type NCCLReading struct {
	BusBW          float64 // GB/s at the largest message size, the better of out-of-place and in-place
	ExpectedBusBW  float64 // GB/s, see ExpectedBusBW
	AdvertisedGbps int     // per node, see AdvertisedGbps
	Percent        int     // BusBW as a share of ExpectedBusBW, rounded down
	Warning        string  // set when Percent < NCCLWarnPercent, or on the overlay below its floor
}

// ReadAllReduce reads the NCCL check's output (ParseAllReduce) for this
// cluster. An error means the test did not measure the whole cluster: it
// failed, was cut short, or ran on fewer ranks than the cluster has GPUs.
func (c Cluster) ReadAllReduce(output string) (NCCLReading, error) {
	res, err := c.parseWhole(output)
	if err != nil {
		return NCCLReading{}, err
	}
	r := NCCLReading{BusBW: res.busBW(), ExpectedBusBW: c.ExpectedBusBW(), AdvertisedGbps: c.AdvertisedGbps()}
	if r.ExpectedBusBW > 0 {
		r.Percent = int(math.Floor(100 * r.BusBW / r.ExpectedBusBW))
	}
	switch {
	case c.Overlay() && r.BusBW < OverlayFloorGBps:
		r.Warning = fmt.Sprintf("The encrypted overlay delivers %s GB/s bus bandwidth, below its floor of %s GB/s (about 1 to 2 Gbit/s between machines): "+
			"expect slower multi-node training than the offer suggests.", GBps(r.BusBW), GBps(OverlayFloorGBps))
	case !c.Overlay() && r.Percent < NCCLWarnPercent:
		r.Warning = fmt.Sprintf("The interconnect delivers %d %% of what it advertises (%s of %s GB/s bus bandwidth): "+
			"expect slower multi-node training than the offer suggests.", r.Percent, GBps(r.BusBW), GBps(r.ExpectedBusBW))
	}
	return r, nil
}
