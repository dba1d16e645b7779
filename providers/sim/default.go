package sim

import (
	"fmt"
	"strings"

	"github.com/clusterdeck/clusterdeck/providers"
)

// Accelerator names the default catalog sells (O1).
const (
	accH200    = "H200_141GB"
	accH100    = "H100_80GB"
	accA100    = "A100_80GB"
	accL40S    = "L40S"
	accRTX4090 = "RTX_4090"
)

// perGPU is the host share (vCPUs, memory GB) that comes with each GPU.
var perGPU = map[string][2]int{
	accH200:    {24, 256},
	accH100:    {26, 225},
	accA100:    {30, 225},
	accL40S:    {16, 96},
	accRTX4090: {12, 64},
}

// Disk rates in micro-dollars per GB-hour: a 500 GB root disk costs 5–10
// cents an hour.
const (
	diskDatacenter = 137 // about $0.10 per GB-month
	diskBareMetal  = 200 // local NVMe
	diskCommunity  = 110
	diskGateway    = 150
)

// DefaultConfig is a realistic catalog of twelve locations across the US,
// Europe and Asia: counted stock (some above 64, some as small as 2 or 3),
// yes/no locations (some saying no), community hosts, and locations reached
// only through an SSH gateway. It is always valid.
func DefaultConfig() Config {
	return Config{
		BootTimes: map[string]Duration{
			providers.Container: Duration(DefaultContainerBoot),
			providers.VM:        Duration(DefaultVMBoot),
			providers.BareMetal: Duration(DefaultBareMetalBoot),
		},
		HiddenCapacity: DefaultHiddenCapacity,
		Locations: []Location{
			location("us-east-1", "Ashburn, VA, US", "",
				offer(accH100, providers.BareMetal, providers.InfiniBand, 8, 2_490_000, diskBareMetal, free(12)),
				offer(accH200, providers.BareMetal, providers.InfiniBand, 8, 3_790_000, diskBareMetal, free(3)),
				offer(accH100, providers.VM, providers.Ethernet, 1, 2_190_000, diskDatacenter, free(70)),
				offer(accH100, providers.VM, providers.Ethernet, 2, 2_190_000, diskDatacenter, free(34)),
				offer(accA100, providers.VM, providers.Ethernet, 8, 1_290_000, diskDatacenter, free(20)),
			),
			location("us-central-1", "Dallas, TX, US", "",
				offer(accA100, providers.VM, providers.Ethernet, 1, 1_290_000, diskDatacenter, free(96)),
				offer(accA100, providers.VM, providers.Ethernet, 4, 1_290_000, diskDatacenter, free(24)),
				offer(accL40S, providers.VM, providers.Ethernet, 1, 890_000, diskDatacenter, free(128)),
				offer(accL40S, providers.VM, providers.Ethernet, 4, 890_000, diskDatacenter, free(16)),
				offer(accH100, providers.BareMetal, providers.RoCE, 8, 2_390_000, diskBareMetal, free(6)),
			),
			location("us-west-1", "Hillsboro, OR, US", "",
				offer(accH100, providers.BareMetal, providers.InfiniBand, 8, 2_490_000, diskBareMetal, saysYes),
				offer(accH200, providers.BareMetal, providers.InfiniBand, 8, 3_690_000, diskBareMetal, saysNo),
				offer(accA100, providers.VM, providers.Ethernet, 2, 1_390_000, diskDatacenter, saysYes),
			),
			location("us-west-2", "San Jose, CA, US", gateway("us-west-2"),
				offer(accH100, providers.VM, providers.RoCE, 4, 2_290_000, diskGateway, free(10)),
				offer(accL40S, providers.Container, providers.Ethernet, 1, 790_000, diskGateway, free(80)),
			),
			location("ca-central-1", "Montréal, QC, CA", "",
				offer(accA100, providers.BareMetal, providers.InfiniBand, 8, 1_490_000, diskBareMetal, free(4)),
				offer(accL40S, providers.VM, providers.Ethernet, 2, 910_000, diskDatacenter, saysYes),
			),
			location("eu-central-1", "Frankfurt, DE", "",
				offer(accH100, providers.BareMetal, providers.InfiniBand, 8, 2_690_000, diskBareMetal, free(8)),
				offer(accH100, providers.VM, providers.Ethernet, 1, 2_390_000, diskDatacenter, free(65)),
				offer(accH200, providers.VM, providers.RoCE, 8, 3_990_000, diskDatacenter, free(2)),
			),
			location("eu-north-1", "Kajaani, FI", "",
				offer(accH200, providers.BareMetal, providers.InfiniBand, 8, 3_490_000, diskBareMetal, saysYes),
				offer(accH100, providers.BareMetal, providers.InfiniBand, 8, 2_290_000, diskBareMetal, saysNo),
				offer(accA100, providers.VM, providers.Ethernet, 4, 1_190_000, diskDatacenter, saysYes),
			),
			location("eu-west-1", "Amsterdam, NL", gateway("eu-west-1"),
				offer(accA100, providers.VM, providers.RoCE, 8, 1_390_000, diskGateway, free(16)),
				offer(accL40S, providers.VM, providers.Ethernet, 8, 950_000, diskGateway, free(12)),
			),
			location("ap-northeast-1", "Tokyo, JP", "",
				offer(accH100, providers.BareMetal, providers.InfiniBand, 8, 2_990_000, diskBareMetal, free(5)),
				offer(accL40S, providers.Container, providers.Ethernet, 2, 990_000, diskDatacenter, free(40)),
			),
			location("ap-southeast-1", "Singapore, SG", "",
				offer(accH100, providers.VM, providers.Ethernet, 4, 2_590_000, diskDatacenter, saysYes),
				offer(accA100, providers.VM, providers.Ethernet, 1, 1_490_000, diskDatacenter, saysNo),
				offer(accRTX4090, providers.Container, providers.Ethernet, 1, 590_000, diskDatacenter, saysYes),
			),
			community(location("community-us-tx", "Austin, TX, US (community)", "",
				offer(accRTX4090, providers.Container, providers.Ethernet, 1, 390_000, diskCommunity, free(72)),
				offer(accRTX4090, providers.Container, providers.Ethernet, 2, 390_000, diskCommunity, free(20)),
				offer(accRTX4090, providers.VM, providers.Ethernet, 8, 440_000, diskCommunity, free(3)),
			)),
			community(location("community-eu-pl", "Warsaw, PL (community)", gateway("community-eu-pl"),
				offer(accRTX4090, providers.Container, providers.Ethernet, 4, 350_000, diskCommunity, saysYes),
				offer(accL40S, providers.Container, providers.Ethernet, 1, 690_000, diskCommunity, saysYes),
			)),
		},
	}
}

// stock is how an offer reports its free machines.
type stock func(*OfferConfig)

// free is a counted stock of n free machines.
func free(n int) stock { return func(o *OfferConfig) { o.NodesAvailable = &n } }

// saysYes and saysNo are yes/no stocks (nodes_available null).
func saysYes(o *OfferConfig) { t := true; o.Available = &t }
func saysNo(o *OfferConfig)  { f := false; o.Available = &f }

// offer builds one default offer; the location fills in its id.
func offer(acc, kind, ic string, gpus int, perGPUHour, diskRate int64, s stock) OfferConfig {
	share := perGPU[acc]
	o := OfferConfig{
		Accelerator:   acc,
		MachineKind:   kind,
		Interconnect:  ic,
		GPUsPerNode:   gpus,
		VCPUs:         share[0] * gpus,
		MemoryGB:      share[1] * gpus,
		PerGPUHourUSD: perGPUHour,
		RootDiskGB:    250 * gpus, // 250, 500, 1000 or 2000 GB
		DiskGBHourUSD: diskRate,
	}
	o.NICs, o.NICGbps = fabricCards(acc, ic, gpus)
	s(&o)
	return o
}

// fabricCards is the default catalog's fabric per machine: one card per GPU,
// 400 Gbit/s NDR for H100 and H200 (InfiniBand, and RoCE as IBM Cloud's
// H100 cluster network: "8x 400 Gbps"), 200 Gbit/s HDR for A100 (DGX A100);
// the 4-GPU H100 RoCE machines have 200 Gbit/s cards and the 8-GPU A100
// RoCE machines two 100 Gbit/s cards per GPU (as OCI's BM.GPU4.8, 16 × 100G).
// Ethernet offers have none: their machines meet on an encrypted overlay.
func fabricCards(acc, ic string, gpus int) (nics, gbps int) {
	switch {
	case ic == providers.Ethernet:
		return 0, 0
	case acc == accA100 && ic == providers.RoCE:
		return 2 * gpus, 100
	case acc == accA100, ic == providers.RoCE && gpus == 4:
		return gpus, 200
	}
	return gpus, 400
}

// location builds a location and gives its offers ids like
// "us-east-1.h100-80gb.8x.bare-metal.infiniband".
func location(id, name, gw string, offers ...OfferConfig) Location {
	for i := range offers {
		o := &offers[i]
		o.ID = strings.ToLower(fmt.Sprintf("%s.%s.%dx.%s.%s", id,
			strings.ReplaceAll(o.Accelerator, "_", "-"), o.GPUsPerNode,
			strings.ReplaceAll(o.MachineKind, "_", "-"), o.Interconnect))
	}
	return Location{ID: id, Name: name, Gateway: gw, Offers: offers}
}

func community(l Location) Location { l.Community = true; return l }

func gateway(loc string) string { return "jump@gw." + loc + ".sim.clusterdeck.test:22" }
